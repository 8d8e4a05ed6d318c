
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * NodeInfo 2.1: "/.well-known/nodeinfo" links to the document, at
 * "/.well-known/nodeinfo/2.1".  Its users are the host's entities as
 * the request already knows them (the entity it evaluated to and its
 * registry state): no anonymous request scans the store.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_ap.h"


/* debian/changelog's version: the module's, not the protocol's */
#define NGX_HTTP_TENT_AP_SOFTWARE_VERSION  "0.2.0"

#define NGX_HTTP_TENT_NODEINFO_SCHEMA                                         \
    "http://nodeinfo.diaspora.software/ns/schema/2.1"


ngx_int_t
ngx_http_tent_nodeinfo(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t document)
{
    u_char                    *p;
    json_t                    *doc, *users;
    ngx_str_t                  href, body;
    ngx_http_tent_srv_conf_t  *scf;

    static const char  path[] = "/.well-known/nodeinfo/2.1";

    if (!document) {
        href.len = ctx->origin.len + sizeof(path) - 1;
        href.data = ngx_pnalloc(r->pool, href.len);
        if (href.data == NULL) {
            return ngx_http_tent_internal_error(r, "writing the nodeinfo");
        }

        p = ngx_cpymem(href.data, ctx->origin.data, ctx->origin.len);
        ngx_memcpy(p, path, sizeof(path) - 1);

        doc = json_pack("{s:[{s:s, s:s%}]}", "links",
                        "rel", NGX_HTTP_TENT_NODEINFO_SCHEMA,
                        "href", href.data, href.len);

    } else {
        scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

        /*
         * A server of one entity per host counts it (once created, when
         * provisioned).  Where entities are paths of one host, their
         * number would take a scan of the registry: left out.
         */

        if (scf->provisioning && scf->entity
            && ngx_strlchr(scf->entity->value.data,
                           scf->entity->value.data + scf->entity->value.len,
                           '$')
            && ctx->root_path.len > 1)
        {
            users = json_object();

        } else {
            users = json_pack("{s:i, s:i, s:i}",
                              "total",
                              ctx->registry > NGX_HTTP_TENT_REG_ACTIVE
                              ? 0 : 1,
                              "activeHalfyear",
                              ctx->registry > NGX_HTTP_TENT_REG_ACTIVE
                              ? 0 : 1,
                              "activeMonth",
                              ctx->registry > NGX_HTTP_TENT_REG_ACTIVE
                              ? 0 : 1);
        }

        doc = json_pack("{s:s, s:{s:s, s:s}, s:[s],"
                        " s:{s:[], s:[]}, s:b, s:{s:o}, s:{}}",
                        "version", "2.1",
                        "software",
                        "name", "ngx-http-tent-module",
                        "version", NGX_HTTP_TENT_AP_SOFTWARE_VERSION,
                        "protocols", "activitypub",
                        "services", "inbound", "outbound",
                        "openRegistrations", 0,
                        "usage", "users", users,
                        "metadata");
    }

    doc = ngx_http_tent_json_own(r->pool, doc);

    if (doc == NULL || ngx_http_tent_json_dump(r->pool, doc, &body) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the nodeinfo");
    }

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK,
                                 document
                                 ? "application/json; profile=\""
                                   NGX_HTTP_TENT_NODEINFO_SCHEMA "#\""
                                 : "application/json",
                                 &body);
}
