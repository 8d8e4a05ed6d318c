
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The OAuth authorize page's parameters: a query string or a form body
 * decoded by ngx_http_tent_form_arg() ("+" is a space, %XX unescaped),
 * for every field ngx_http_tent_oauth_params() reads; then what the page
 * does with them: HTML-escaped (ngx_http_tent_html()), the comma lists
 * as JSON arrays (ngx_http_tent_comma_list()), and the form token over
 * all of them (ngx_http_tent_oauth_token()).
 * Input: the query string or form body.
 */


#include "../src/auth/ngx_http_tent_oauth.c"
#include "../src/base/ngx_http_tent_json.c"
#include "../src/base/ngx_http_tent_util.c"

#include "fuzz.h"


static void
ngx_fuzz_check_html(ngx_pool_t *pool, ngx_str_t *s)
{
    u_char     *p;
    ngx_str_t   html;

    ngx_fuzz_assert(ngx_http_tent_html(pool, s, &html) == NGX_OK);
    ngx_fuzz_assert(html.len >= s->len && html.len <= s->len * 6);

    for (p = html.data; p < html.data + html.len; p++) {
        ngx_fuzz_assert(*p != '<' && *p != '>' && *p != '"' && *p != '\'');
    }
}


static void
ngx_fuzz_check_list(ngx_str_t *s)
{
    size_t   i;
    json_t  *list, *v;

    list = ngx_http_tent_comma_list(s);
    ngx_fuzz_assert(list != NULL);

    json_array_foreach(list, i, v) {
        ngx_fuzz_assert(json_is_string(v));
        ngx_fuzz_assert(json_string_length(v) > 0);
        ngx_fuzz_assert(json_string_value(v)[0] != ' ');
        ngx_fuzz_assert(memchr(json_string_value(v), ',',
                               json_string_length(v))
                        == NULL);
    }

    json_decref(list);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                 *p;
    ngx_int_t               rc;
    ngx_str_t               src, token, *f;
    ngx_pool_t             *pool;
    ngx_http_request_t     *r;
    ngx_http_tent_oauth_t   oa;

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    r = ngx_fuzz_request(pool);

    src.data = ngx_fuzz_dup(data, size);
    src.len = size;

    ngx_memzero(&oa, sizeof(ngx_http_tent_oauth_t));

    rc = ngx_http_tent_oauth_params(r, &oa, &src);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);

    /* every field decoded so far is no longer than what it came from */

    for (f = &oa.client_id; f <= &oa.decision; f++) {
        ngx_fuzz_assert(f->len <= src.len);
        ngx_fuzz_assert(f->len == 0 || f->data != NULL);
    }

    if (rc == NGX_OK) {
        for (f = &oa.client_id; f <= &oa.decision; f++) {
            ngx_fuzz_assert(f->len <= 2048);

            for (p = f->data; p < f->data + f->len; p++) {
                ngx_fuzz_assert(*p >= 0x20 && *p != 0x7f);
            }

            ngx_fuzz_check_html(pool, f);
        }

        ngx_fuzz_check_list(&oa.scope);
        ngx_fuzz_check_list(&oa.post_types);
        ngx_fuzz_check_list(&oa.info_types);

        ngx_str_set(&oa.owner, "alice");
        ngx_str_set(&oa.secret, "0123456789abcdef0123456789abcdef");

        ngx_fuzz_assert(ngx_http_tent_oauth_token(r, &oa, NGX_FUZZ_NOW,
                                                  &token)
                        == NGX_OK);

        /* "<issued>.<43 characters of base64url>" */
        ngx_fuzz_assert(token.len == 10 + 1 + 43);
        ngx_fuzz_assert(token.data[10] == '.');
    }

    ngx_destroy_pool(pool);
    free(src.data);

    return 0;
}
