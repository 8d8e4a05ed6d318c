
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Discovery: every response of a server with tent_entity carries the
 * profile Link header, whoever produced it (our routes, static files,
 * error pages).  Errors under the API root become JSON, whoever produced
 * them: nginx's own 413 or 405 included.  Variables let operators put the
 * HTML <link> into pages with sub_filter.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_profile.h"


static ngx_int_t ngx_http_tent_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_tent_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


#define NGX_HTTP_TENT_VAR_ENTITY       0
#define NGX_HTTP_TENT_VAR_PROFILE_URL  1
#define NGX_HTTP_TENT_VAR_API_ROOT     2


static ngx_http_variable_t  ngx_http_tent_vars[] = {

    { ngx_string("tent_entity"), NULL, ngx_http_tent_variable,
      NGX_HTTP_TENT_VAR_ENTITY, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("tent_profile_url"), NULL, ngx_http_tent_variable,
      NGX_HTTP_TENT_VAR_PROFILE_URL, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("tent_api_root"), NULL, ngx_http_tent_variable,
      NGX_HTTP_TENT_VAR_API_ROOT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_tent_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_tent_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_discovery_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_tent_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_tent_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_str_t                 *s;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_srv_conf_t  *scf;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_TENT_VAR_ENTITY:
        s = &ctx->entity;
        break;

    case NGX_HTTP_TENT_VAR_PROFILE_URL:
        s = &ctx->profile_url;
        break;

    default:
        scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
        s = &scf->api_root;
        break;
    }

    v->len = s->len;
    v->data = s->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_add_link(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t form)
{
    u_char           *p;
    ngx_str_t         url;
    ngx_table_elt_t  *h;

    url = ctx->profile_url;

    if (form == NGX_HTTP_TENT_LINK_RELATIVE) {
        url.data += ctx->origin.len;
        url.len -= ctx->origin.len;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.len = sizeof("<>; rel=\"" NGX_HTTP_TENT_PROFILE_REL "\"") - 1
                   + url.len;

    p = ngx_pnalloc(r->pool, h->value.len);
    if (p == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    h->value.data = p;

    *p++ = '<';
    p = ngx_cpymem(p, url.data, url.len);
    ngx_memcpy(p, ">; rel=\"" NGX_HTTP_TENT_PROFILE_REL "\"",
               sizeof(">; rel=\"" NGX_HTTP_TENT_PROFILE_REL "\"") - 1);

    h->hash = 1;
    ngx_str_set(&h->key, "Link");

#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_add_nosniff(ngx_http_request_t *r)
{
    ngx_str_t  nosniff = ngx_string("nosniff");

    return ngx_http_tent_add_header(r, "X-Content-Type-Options", &nosniff);
}


static ngx_int_t
ngx_http_tent_header_filter(ngx_http_request_t *r)
{
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_loc_conf_t  *lcf;
    ngx_http_tent_srv_conf_t  *scf;

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return ngx_http_next_header_filter(r);
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);
    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    /* provisioning: no Link to a profile that is not there (yet) */

    if (lcf->link != NGX_HTTP_TENT_LINK_OFF
        && (!scf->provisioning || ctx->registry == NGX_HTTP_TENT_REG_ACTIVE)
        && ngx_http_tent_add_link(r, ctx, lcf->link) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * What we answer is what its type says, never sniffed into HTML or a
     * script (an attachment, or JSON echoing what a client wrote).
     */

    if (ngx_http_tent_is_api_request(r, ctx)
        && ngx_http_tent_add_nosniff(r) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * An error under the API root that is not our own JSON: nginx's page
     * (a 413 from client_max_body_size, say) becomes {"error": ...}.
     */

    if (r->headers_out.status >= NGX_HTTP_BAD_REQUEST && !ctx->own_reply
        && ngx_http_tent_is_api_request(r, ctx))
    {
        if (ngx_http_tent_error_body(r->pool, r->headers_out.status, NULL,
                                     &ctx->error_body)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        ctx->replace_body = 1;

        ngx_str_set(&r->headers_out.content_type, NGX_HTTP_TENT_MEDIA_TYPE);
        r->headers_out.content_type_len = r->headers_out.content_type.len;
        r->headers_out.content_type_lowcase = NULL;
        r->headers_out.charset.len = 0;

        r->headers_out.content_length_n = ctx->error_body.len;

        if (r->headers_out.content_length) {
            r->headers_out.content_length->hash = 0;
            r->headers_out.content_length = NULL;
        }

        ngx_http_clear_last_modified(r);
        ngx_http_clear_etag(r);
        ngx_http_clear_accept_ranges(r);
    }

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_tent_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t            *b;
    ngx_chain_t          *cl, out;
    ngx_http_tent_ctx_t  *ctx;

    if (r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    if (ctx == NULL || !ctx->replace_body) {
        return ngx_http_next_body_filter(r, in);
    }

    /* swallow nginx's HTML, send ours once */

    for (cl = in; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }

    if (ctx->replaced) {
        return NGX_OK;
    }

    ctx->replaced = 1;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = ctx->error_body.data;
    b->last = ctx->error_body.data + ctx->error_body.len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


/*
 * GET or HEAD of the entity's own URL when nothing else answers it (this
 * runs last in the content phase): a plain page, and the Link header.
 */

ngx_int_t
ngx_http_tent_root_handler(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    ngx_buf_t            *b;
    ngx_chain_t           out;
    ngx_http_tent_ctx_t  *ctx;

    static u_char  body[] = "Tent!\n";

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid
        || r->uri.len != ctx->root_path.len
        || ngx_strncmp(r->uri.data, ctx->root_path.data, r->uri.len) != 0)
    {
        return NGX_DECLINED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_tent_add_nosniff(r) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "adding the nosniff header");
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = sizeof(body) - 1;
    ngx_str_set(&r->headers_out.content_type, "text/plain");
    r->headers_out.content_type_len = sizeof("text/plain") - 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the page's buffer");
    }

    b->pos = body;
    b->last = body + sizeof(body) - 1;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
