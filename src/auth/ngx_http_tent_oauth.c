
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * {api_root}/oauth/authorize: the entity's owner approves an app.  Who
 * the owner is, nginx decides (auth_basic, auth_request, client
 * certificates): tent_owner names a value that is non-empty for the
 * owner.  GET shows the confirmation page; its form POSTs back with a
 * token bound to the owner and every parameter (HMAC with a per-entity
 * secret from the store), so another site cannot make the owner approve.
 * On a provisioning server the owner is the one who signs in with the
 * entity's own password first (ngx_http_tent_oauth_signin.c).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_oauth_private.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


static ngx_int_t ngx_http_tent_oauth_start(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_oauth_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_oauth_secret_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_oauth_decided(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_oauth_approved(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/*
 * One parameter of a query string or form body, decoded ("+" is a
 * space).  NGX_DECLINED when absent.
 */

ngx_int_t
ngx_http_tent_form_arg(ngx_pool_t *pool, ngx_str_t *src, const char *name,
    ngx_str_t *out)
{
    size_t   nlen;
    u_char  *p, *last, *start, *end, *dst, *s;

    nlen = ngx_strlen(name);
    p = src->data;
    last = p + src->len;

    while (p < last) {
        start = p;
        end = ngx_strlchr(p, last, '&');
        if (end == NULL) {
            end = last;
        }

        p = end + 1;

        if ((size_t) (end - start) > nlen && start[nlen] == '='
            && ngx_strncmp(start, name, nlen) == 0)
        {
            start += nlen + 1;

            out->data = ngx_pnalloc(pool, end - start + 1);
            if (out->data == NULL) {
                return NGX_ERROR;
            }

            for (s = start, dst = out->data; s < end; s++) {
                *dst++ = (*s == '+') ? ' ' : *s;
            }

            s = out->data;
            dst = out->data;
            ngx_unescape_uri(&dst, &s, end - start, 0);

            out->len = dst - out->data;
            return NGX_OK;
        }
    }

    ngx_str_set(out, "");

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_tent_oauth_params(ngx_http_request_t *r, ngx_http_tent_oauth_t *oa,
    ngx_str_t *src)
{
    struct {
        const char  *name;
        ngx_str_t   *dst;
    } *f, fields[] = {
        { "client_id", &oa->client_id },
        { "redirect_uri", &oa->redirect_uri },
        { "scope", &oa->scope },
        { "state", &oa->state },
        { "tent_post_types", &oa->post_types },
        { "tent_profile_info_types", &oa->info_types },
        { "tent_notification_url", &oa->notification_url },
        { "csrf", &oa->csrf },
        { "decision", &oa->decision },
        { NULL, NULL }
    };

    u_char  *p;

    for (f = fields; f->name; f++) {
        if (ngx_http_tent_form_arg(r->pool, src, f->name, f->dst)
            == NGX_ERROR)
        {
            return NGX_ERROR;
        }

        /* nothing of these ever needs control characters */

        for (p = f->dst->data; p < f->dst->data + f->dst->len; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                return NGX_DECLINED;
            }
        }

        if (f->dst->len > 2048
            || !ngx_http_tent_utf8_valid(f->dst->data, f->dst->len))
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_oauth_authorize(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  owner;
    ngx_http_tent_oauth_t     *oa;
    ngx_http_tent_loc_conf_t  *lcf;
    ngx_http_tent_srv_conf_t  *scf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);
    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    ngx_str_null(&owner);

    /*
     * A provisioned entity's owner signs in with the entity's own
     * password (ngx_http_tent_oauth_signin.c); tent_owner, one for every
     * tenant of the server, is refused there at "nginx -t".
     */

    if (scf->provisioning) {
        owner = ctx->entity;

    } else if (lcf->owner
        && ngx_http_complex_value(r, lcf->owner, &owner) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "evaluating tent_owner");
    }

    /* never an open approval page */

    if (owner.len == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's owner is not identified here: protect "
                   "this location with nginx access control (auth_basic, "
                   "auth_request...) and set tent_owner, e.g. "
                   "\"tent_owner $remote_user;\"");
    }

    oa = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_oauth_t));
    if (oa == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the page's state");
    }

    oa->owner = owner;
    ctx->state = oa;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent oauth: %V by the owner \"%V\" of \"%V\"",
                   &r->method_name, &owner, &ctx->entity);

    if (r->method == NGX_HTTP_POST) {
        return ngx_http_tent_read_form(r, ctx, ngx_http_tent_oauth_start);
    }

    return ngx_http_tent_oauth_start(r, ctx);
}


static ngx_int_t
ngx_http_tent_oauth_start(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_str_t                  src;
    ngx_http_tent_oauth_t     *oa;

    oa = ctx->state;

    if (r->method == NGX_HTTP_POST) {
        src = ctx->form;

    } else {
        src = r->args;
    }

    rc = ngx_http_tent_oauth_params(r, oa, &src);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the page's parameters");
    }

    if (rc == NGX_DECLINED || oa->client_id.len == 0
        || oa->redirect_uri.len == 0)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "client_id and redirect_uri are required");
    }

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_APP,
                                           &oa->client_id,
                                           ngx_http_tent_oauth_app_loaded);
}


static ngx_int_t
ngx_http_tent_oauth_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    size_t                     i;
    json_t                    *app, *uris, *v;
    ngx_int_t                  rc;
    ngx_str_t                  value, key, rest;
    ngx_uint_t                 found;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_oauth_t     *oa;
    ngx_http_tent_store_op_t  *get;

    app = ngx_http_tent_store_request_record(r, op, "Unknown client_id",
                                             "reading the app record",
                                             &value, &rc);
    if (app == NULL) {
        return rc;
    }

    ctx = ngx_http_tent_get_ctx(r);
    oa = ctx->state;

    /* an unregistered redirect_uri is never redirected to */

    found = 0;
    uris = json_object_get(app, "redirect_uris");

    json_array_foreach(uris, i, v) {
        if (json_is_string(v)
            && json_string_length(v) == oa->redirect_uri.len
            && ngx_strncmp(json_string_value(v), oa->redirect_uri.data,
                           oa->redirect_uri.len) == 0)
        {
            found = 1;
            break;
        }
    }

    if (!found) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "redirect_uri is not one the app registered");
    }

    /* registered before such URIs were refused: still never followed */

    if (!ngx_http_tent_redirect_uri_valid(oa->redirect_uri.data,
                                          oa->redirect_uri.len))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "redirect_uri is not an http or https URL: the app "
                   "must register again");
    }

    oa->app = app;
    oa->app_raw = value;

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    ngx_str_set(&rest, "oauth-secret");

    if (get == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &rest, &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the secret's key");
    }

    /* the entity's secret: created on first use, once */

    if (ngx_http_tent_random_hex(r->pool, 32, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the entity's secret");
    }

    if (ngx_http_tent_store_cas(get, &key, NULL, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "preparing the secret's write");
    }

    oa->secret = value;

    return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_oauth_secret_loaded);
}


/* the token: "<issued>.<base64url HMAC of everything the form carries>" */

ngx_int_t
ngx_http_tent_oauth_token(ngx_http_request_t *r, ngx_http_tent_oauth_t *oa,
    time_t issued, ngx_str_t *token)
{
    u_char        *p;
    u_char         digest[EVP_MAX_MD_SIZE];
    unsigned int   dlen;
    ngx_str_t      text, src, dst, session;

    /* no session (a fixed entity's page): none in the text, not NULL */

    session = oa->session;

    if (session.data == NULL) {
        ngx_str_set(&session, "");
    }

    text.len = NGX_TIME_T_LEN + oa->owner.len + oa->client_id.len
               + oa->redirect_uri.len + oa->scope.len + oa->state.len
               + oa->post_types.len + oa->info_types.len
               + oa->notification_url.len + oa->session.len + 16;

    text.data = ngx_pnalloc(r->pool, text.len);
    if (text.data == NULL) {
        return NGX_ERROR;
    }

    /* a provisioned owner's: bound to the session, or to the sign-in */

    p = ngx_sprintf(text.data, "%T\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n%V",
                    issued, &oa->owner, &oa->client_id, &oa->redirect_uri,
                    &oa->scope, &oa->state, &oa->post_types, &oa->info_types,
                    &oa->notification_url, &session);
    text.len = p - text.data;

    if (HMAC(EVP_sha256(), oa->secret.data, (int) oa->secret.len, text.data,
             text.len, digest, &dlen)
        == NULL)
    {
        return NGX_ERROR;
    }

    token->data = ngx_pnalloc(r->pool, NGX_TIME_T_LEN + 1
                                       + ngx_base64_encoded_length(dlen));
    if (token->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(token->data, "%T.", issued);

    src.data = digest;
    src.len = dlen;
    dst.data = p;

    ngx_encode_base64url(&dst, &src);

    token->len = p - token->data + dst.len;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_oauth_secret_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_oauth_t     *oa;
    ngx_http_tent_srv_conf_t  *scf;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    oa = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        /* it existed: that one is the secret */
        ngx_http_tent_store_value(op, &oa->secret);
    }

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (scf->provisioning) {
        return ngx_http_tent_oauth_signin(r, ctx, oa);
    }

    if (r->method != NGX_HTTP_POST) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent oauth: the page for app \"%V\"",
                       &oa->client_id);

        return ngx_http_tent_oauth_page(r, oa);
    }

    if (ngx_http_tent_oauth_csrf_ok(r, oa) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The confirmation form expired or was not ours: "
                   "start the authorization again");
    }

    return ngx_http_tent_oauth_decide(r, ctx, oa);
}


/* the form's token: ours, for these parameters, not expired */

ngx_int_t
ngx_http_tent_oauth_csrf_ok(ngx_http_request_t *r, ngx_http_tent_oauth_t *oa)
{
    time_t      issued;
    u_char     *dot;
    ngx_str_t   token;

    dot = ngx_strlchr(oa->csrf.data, oa->csrf.data + oa->csrf.len, '.');
    issued = dot ? ngx_atotm(oa->csrf.data, dot - oa->csrf.data) : NGX_ERROR;

    if (issued == NGX_ERROR || issued > ngx_time()
        || issued + NGX_HTTP_TENT_CSRF_TTL < ngx_time()
        || ngx_http_tent_oauth_token(r, oa, issued, &token) != NGX_OK
        || token.len != oa->csrf.len
        || CRYPTO_memcmp(token.data, oa->csrf.data, token.len) != 0)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* &<>"' escaped, for text and attribute values */

static ngx_int_t
ngx_http_tent_html(ngx_pool_t *pool, ngx_str_t *src, ngx_str_t *dst)
{
    u_char  *p, *s;
    size_t   len;

    len = 0;

    for (s = src->data; s < src->data + src->len; s++) {
        switch (*s) {
        case '&': len += 5; break;
        case '<': case '>': len += 4; break;
        case '"': case '\'': len += 6; break;
        default: len++;
        }
    }

    dst->data = ngx_pnalloc(pool, len);
    if (dst->data == NULL) {
        return NGX_ERROR;
    }

    p = dst->data;

    for (s = src->data; s < src->data + src->len; s++) {
        switch (*s) {
        case '&': p = ngx_cpymem(p, "&amp;", 5); break;
        case '<': p = ngx_cpymem(p, "&lt;", 4); break;
        case '>': p = ngx_cpymem(p, "&gt;", 4); break;
        case '"': p = ngx_cpymem(p, "&quot;", 6); break;
        case '\'': p = ngx_cpymem(p, "&#x27;", 6); break;
        default: *p++ = *s;
        }
    }

    dst->len = p - dst->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_page_add(ngx_http_request_t *r, ngx_chain_t ***last,
    ngx_str_t *s, ngx_uint_t escape)
{
    ngx_buf_t    *b;
    ngx_str_t     e;
    ngx_chain_t  *cl;

    if (escape) {
        if (ngx_http_tent_html(r->pool, s, &e) != NGX_OK) {
            return NGX_ERROR;
        }

        s = &e;
    }

    if (s->len == 0) {
        return NGX_OK;
    }

    b = ngx_calloc_buf(r->pool);
    cl = ngx_alloc_chain_link(r->pool);
    if (b == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    b->pos = s->data;
    b->last = s->data + s->len;
    b->memory = 1;

    cl->buf = b;
    cl->next = NULL;
    **last = cl;
    *last = &cl->next;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_oauth_hidden(ngx_http_request_t *r, ngx_chain_t ***last,
    const char *name, ngx_str_t *value)
{
    ngx_str_t  n;

    n.data = (u_char *) name;
    n.len = ngx_strlen(name);

    ngx_http_tent_lit(r, last, "<input type=\"hidden\" name=\"");
    ngx_http_tent_esc(r, last, &n);
    ngx_http_tent_lit(r, last, "\" value=\"");
    ngx_http_tent_esc(r, last, value);
    ngx_http_tent_lit(r, last, "\">\n");

    return NGX_OK;
}


/* "<form ...>" and its hidden fields: the parameters and a new token */

ngx_int_t
ngx_http_tent_oauth_fields(ngx_http_request_t *r, ngx_chain_t ***last,
    ngx_http_tent_oauth_t *oa)
{
    ngx_str_t  token;

    if (ngx_http_tent_oauth_token(r, oa, ngx_time(), &token) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "signing the form");
    }

    ngx_http_tent_lit(r, last, "<form method=\"post\" action=\"");
    ngx_http_tent_esc(r, last, &r->uri);
    ngx_http_tent_lit(r, last, "\">\n");

    if (ngx_http_tent_oauth_hidden(r, last, "client_id", &oa->client_id)
        != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "redirect_uri",
                                      &oa->redirect_uri)
           != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "scope", &oa->scope) != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "state", &oa->state) != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "tent_post_types",
                                      &oa->post_types)
           != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "tent_profile_info_types",
                                      &oa->info_types)
           != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "tent_notification_url",
                                      &oa->notification_url)
           != NGX_OK
        || ngx_http_tent_oauth_hidden(r, last, "csrf", &token) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the form's fields");
    }

    return NGX_OK;
}


/* a page of ours, not to be framed nor cached */

ngx_int_t
ngx_http_tent_oauth_send(ngx_http_request_t *r, ngx_chain_t *out,
    ngx_uint_t status)
{
    off_t                 len;
    ngx_int_t             rc;
    ngx_chain_t          *cl;
    ngx_table_elt_t      *h;
    ngx_http_tent_ctx_t  *ctx;

    len = 0;

    for (cl = out; cl; cl = cl->next) {
        len += ngx_buf_size(cl->buf);
        if (cl->next == NULL) {
            cl->buf->last_buf = 1;
            cl->buf->last_in_chain = 1;
        }
    }

    /* not to be framed (clickjacking), not to be cached */

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "adding Content-Security-Policy");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Security-Policy");

    if (ngx_http_tent_oauth_csp(&h->value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "hashing the page's style");
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Cache-Control");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    ngx_str_set(&h->value, "no-store");

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding X-Frame-Options");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "X-Frame-Options");
    ngx_str_set(&h->value, "DENY");

    ctx = ngx_http_tent_get_ctx(r);
    ctx->own_reply = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    ngx_str_set(&r->headers_out.content_type, "text/html; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    return ngx_http_output_filter(r, out);
}


/* 302 to the app: redirect_uri?code=...&state=... or ?error=... */

static ngx_int_t
ngx_http_tent_oauth_redirect(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa, const char *name, ngx_str_t *value)
{
    u_char               *p;
    size_t                len;
    uintptr_t             n1, n2;
    ngx_table_elt_t      *h;
    ngx_http_tent_ctx_t  *ctx;

    n1 = ngx_escape_uri(NULL, value->data, value->len, NGX_ESCAPE_ARGS);
    n2 = ngx_escape_uri(NULL, oa->state.data, oa->state.len, NGX_ESCAPE_ARGS);

    len = oa->redirect_uri.len + 1 + ngx_strlen(name) + 1 + value->len
          + 2 * n1 + sizeof("&state=") - 1 + oa->state.len + 2 * n2;

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the Location");
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Location");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Location");
    h->value.data = p;

    p = ngx_cpymem(p, oa->redirect_uri.data, oa->redirect_uri.len);
    *p++ = ngx_strlchr(oa->redirect_uri.data,
                       oa->redirect_uri.data + oa->redirect_uri.len, '?')
           ? '&' : '?';
    p = ngx_sprintf(p, "%s=", name);
    p = (u_char *) ngx_escape_uri(p, value->data, value->len,
                                  NGX_ESCAPE_ARGS);

    if (oa->state.len) {
        p = ngx_cpymem(p, "&state=", sizeof("&state=") - 1);
        p = (u_char *) ngx_escape_uri(p, oa->state.data, oa->state.len,
                                      NGX_ESCAPE_ARGS);
    }

    h->value.len = p - h->value.data;

    ngx_http_clear_location(r);
    r->headers_out.location = h;

    ctx = ngx_http_tent_get_ctx(r);
    ctx->own_reply = 1;

    r->headers_out.status = NGX_HTTP_MOVED_TEMPORARILY;
    r->headers_out.content_length_n = 0;
    r->header_only = 1;

    return ngx_http_send_header(r);
}


/* "a,b,c" as a JSON array; "all" stays a one-element list */

static json_t *
ngx_http_tent_comma_list(ngx_str_t *s)
{
    u_char     *p;
    json_t     *list;
    ngx_str_t   item;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    p = s->data;

    while (ngx_http_tent_next_item(&p, s->data + s->len, &item)) {
        json_array_append_new(list, ngx_http_tent_json_string(&item));
    }

    return list;
}


ngx_int_t
ngx_http_tent_oauth_decide(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_oauth_t *oa)
{
    size_t                     i;
    json_t                    *fields, *scopes, *v, *auth;
    ngx_int_t                  rc;
    ngx_str_t                  s;
    ngx_http_tent_store_op_t  *op;

    if (oa->decision.len != 7
        || ngx_strncmp(oa->decision.data, "approve", 7) != 0)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent oauth: app \"%V\" denied", &oa->client_id);

        ngx_str_set(&s, "access_denied");
        return ngx_http_tent_oauth_redirect(r, oa, "error", &s);
    }

    /* an app's first authorization: under the quota of apps (403) */

    rc = ngx_http_tent_authorization_quota(r, ctx, oa->app,
                                           ngx_http_tent_oauth_decided);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    /* the scopes asked for that exist; unknown names are dropped */

    scopes = ngx_http_tent_comma_list(&oa->scope);
    if (scopes == NULL) {
        return ngx_http_tent_internal_error(r, "listing the scopes asked for");
    }

    for (i = 0; i < json_array_size(scopes); /* void */) {
        v = json_array_get(scopes, i);
        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (ngx_http_tent_scope_bit(&s) == 0) {
            json_array_remove(scopes, i);
            continue;
        }

        i++;
    }

    fields = json_pack("{s:o, s:o, s:o}",
                       "scopes", scopes,
                       "post_types",
                           ngx_http_tent_comma_list(&oa->post_types),
                       "profile_info_types",
                           ngx_http_tent_comma_list(&oa->info_types));

    if (fields == NULL
        || ngx_http_tent_json_cleanup(r->pool, fields) != NGX_OK)
    {
        json_decref(fields);
        return ngx_http_tent_internal_error(r,
                                            "making the authorization fields");
    }

    if (oa->notification_url.len) {
        json_object_set_new(fields, "notification_url",
                            ngx_http_tent_json_string(&oa->notification_url));
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "preparing the authorization");
    }

    rc = ngx_http_tent_authorization_new(r, ctx, &oa->client_id, oa->app,
                                         &oa->app_raw, fields, op, &auth);

    if (rc == NGX_DECLINED) {
        ngx_str_set(&s, "invalid_request");
        return ngx_http_tent_oauth_redirect(r, oa, "error", &s);
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the authorization");
    }

    oa->app = auth;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_oauth_approved);
}


/* the decision again, once the app's place in the quota is taken */

static ngx_int_t
ngx_http_tent_oauth_decided(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_oauth_decide(r, ctx, ctx->state);
}


static ngx_int_t
ngx_http_tent_oauth_approved(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t               rc;
    ngx_str_t               code;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_oauth_t  *oa;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    oa = ctx->state;

    /* the app as shown is the app authorized, or nothing is */

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "Unknown client_id");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The app changed meanwhile: start the authorization "
                   "again");
    }

    (void) ngx_http_tent_json_str(oa->app, "token_code", &code);

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent: \"%V\" authorized app \"%V\" for %V",
                  &oa->owner, &oa->client_id, &ctx->entity);

    return ngx_http_tent_oauth_redirect(r, oa, "code", &code);
}
