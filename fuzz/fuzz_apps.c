
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Request bodies of the apps API, parsed as the module parses them
 * (ngx_http_tent_json_parse()) and validated: an app's fields
 * (ngx_http_tent_app_fields(), for POST /apps and PUT /apps/:id) and an
 * authorization's (ngx_http_tent_auth_fields()); then what the handlers
 * build from an accepted body: the record with its secrets
 * (ngx_http_tent_secrets(), as an importing app with write_secrets or
 * not), the credential record, the views clients get, and the JSON
 * dump that is stored.
 * Input: byte 0 the caller's scopes (bit 0: write_secrets, bit 1:
 * read_apps), the rest the JSON body.
 */


#include "../src/auth/ngx_http_tent_apps.c"
#include "../src/auth/ngx_http_tent_apps_register.c"
#include "../src/auth/ngx_http_tent_authorizations.c"
#include "../src/base/ngx_http_tent_json.c"
#include "../src/auth/ngx_http_tent_auth.c"
#include "../src/base/ngx_http_tent_util.c"

#include "fuzz.h"


static void
ngx_fuzz_dump(ngx_pool_t *pool, json_t *json)
{
    json_t     *back;
    ngx_str_t   out;

    ngx_fuzz_assert(json != NULL);
    ngx_fuzz_assert(ngx_http_tent_json_dump(pool, json, &out) == NGX_OK);

    /* what is stored reads back */

    back = ngx_http_tent_json_parse(&out, &ngx_fuzz_log);
    ngx_fuzz_assert(back != NULL);
    ngx_fuzz_assert(json_equal(back, json));
    json_decref(back);
}


static void
ngx_fuzz_app(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx, json_t *body)
{
    size_t                        i;
    json_t                       *app, *out, *v;
    ngx_int_t                     rc, create;
    ngx_http_tent_field_error_t   err;

    for (create = 1; create >= 0; create--) {
        rc = ngx_http_tent_app_fields(body, create, &err);
        ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR);

        if (rc != NGX_OK) {
            /* a clear error: a client error and a message */
            ngx_fuzz_assert(err.status >= 400 && err.status < 500);
            ngx_fuzz_assert(err.text[0] != '\0');
            continue;
        }

        /* what is accepted is bounded, its redirect URIs http(s) */

        v = json_object_get(body, "redirect_uris");
        ngx_fuzz_assert(json_array_size(v) <= NGX_HTTP_TENT_APP_URIS);

        json_array_foreach(v, i, out) {
            ngx_fuzz_assert(ngx_http_tent_redirect_uri_valid(
                                (u_char *) json_string_value(out),
                                json_string_length(out)));
        }

        ngx_fuzz_assert(json_object_size(json_object_get(body, "scopes"))
                        <= NGX_HTTP_TENT_APP_SCOPES);

        if (create) {
            ngx_fuzz_assert(json_is_string(json_object_get(body, "name")));
            ngx_fuzz_assert(json_is_array(json_object_get(body,
                                                          "redirect_uris")));
        }

        /* as ngx_http_tent_apps_create_body() builds the record */

        app = json_object();
        ngx_fuzz_assert(app != NULL);

        ngx_http_tent_app_copy(app, body);

        if (json_object_get(app, "scopes") == NULL) {
            json_object_set_new(app, "scopes", json_object());
        }

        json_object_set_new(app, "created_at", json_integer(ngx_time()));

        if (ngx_http_tent_secrets(r, ctx, body, app, "a:", "mac_key_id")
            == NGX_OK)
        {
            ngx_fuzz_assert(json_is_string(json_object_get(app,
                                                           "mac_key_id")));
            ngx_fuzz_assert(json_is_string(json_object_get(app, "mac_key")));

            ngx_fuzz_dump(r->pool, app);

            out = ngx_http_tent_app_view(app, 0);
            ngx_fuzz_assert(out != NULL);
            ngx_fuzz_assert(json_object_get(out, "mac_key") == NULL);
            ngx_fuzz_dump(r->pool, out);
            json_decref(out);
        }

        json_decref(app);
    }
}


static void
ngx_fuzz_auth(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx, json_t *body)
{
    json_t     *auth, *cred, *out;
    ngx_int_t   rc;
    ngx_str_t   app_id;

    /* as ngx_http_tent_authorization_new() starts one */

    ngx_str_set(&app_id, "app1");

    auth = json_pack("{s:o, s:[], s:[], s:[], s:n, s:I}",
                     "app_id", ngx_http_tent_json_string(&app_id),
                     "scopes", "post_types", "profile_info_types",
                     "notification_url",
                     "created_at", (json_int_t) ngx_time());
    ngx_fuzz_assert(auth != NULL);

    rc = ngx_http_tent_auth_fields(auth, body);
    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR);

    if (rc == NGX_OK
        && ngx_http_tent_secrets(r, ctx, body, auth, "u:", "mac_key_id")
           == NGX_OK)
    {
        json_object_set_new(auth, "id", json_string("auth1"));

        ngx_fuzz_assert(ngx_http_tent_scope_bits(json_object_get(auth,
                                                                 "scopes"))
                        == ngx_http_tent_scope_bits(json_object_get(body,
                                                                "scopes"))
                        || json_object_get(body, "scopes") == NULL);

        cred = ngx_http_tent_auth_credential(auth);
        ngx_fuzz_assert(cred != NULL);
        ngx_fuzz_dump(r->pool, cred);
        json_decref(cred);

        out = ngx_http_tent_auth_view(auth, ctx, 1);
        ngx_fuzz_assert(out != NULL);
        ngx_fuzz_dump(r->pool, out);
        json_decref(out);
    }

    json_decref(auth);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t               *body;
    ngx_str_t             s;
    ngx_pool_t           *pool;
    ngx_http_request_t   *r;
    ngx_http_tent_ctx_t   ctx;

    if (size < 1) {
        return 0;
    }

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    r = ngx_fuzz_request(pool);

    ngx_memzero(&ctx, sizeof(ngx_http_tent_ctx_t));
    ngx_str_set(&ctx.entity, "https://alice.example");

    if (data[0] & 3) {
        ctx.principal.kind = NGX_HTTP_TENT_AUTHORIZATION;
        ctx.principal.scopes = ((data[0] & 1) ? NGX_HTTP_TENT_WRITE_SECRETS
                                              : 0)
                               | ((data[0] & 2) ? NGX_HTTP_TENT_READ_APPS
                                                : 0);
    }

    s.data = ngx_fuzz_dup(data + 1, size - 1);
    s.len = size - 1;

    body = ngx_http_tent_json_parse(&s, &ngx_fuzz_log);

    if (body) {
        ngx_fuzz_app(r, &ctx, body);
        ngx_fuzz_auth(r, &ctx, body);
        json_decref(body);
    }

    ngx_destroy_pool(pool);
    free(s.data);

    return 0;
}
