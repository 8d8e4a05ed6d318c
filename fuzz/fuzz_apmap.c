
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The ActivityStreams mapping (src/activitypub/ngx_http_tent_ap_map.c,
 * ap_map_in.c, ap_html.c).  Input: byte 0 bit 0 clear: HTML, byte 1 the
 * bound (byte * 16 + 1 bytes, or 64 KB when 255), the rest the HTML:
 * ngx_http_tent_ap_html() must give at most the bound of valid UTF-8
 * made only of the allow-list's tags, balanced, with only their
 * attributes (an href absolute http(s) or mailto, the rel we add, the
 * classes allowed), and no '<' nor '>' in text; ngx_http_tent_ap_text()
 * and ..._text_html() the bound and UTF-8 (the latter its tags too).
 * Set: a JSON document, taken as an inbound object of a fixed actor
 * (ngx_http_tent_ap_to_post(): a refusal has a message, what is made
 * passes ngx_http_tent_post_validate()) and as one of our posts
 * (ngx_http_tent_ap_object() and the three activities: ids under our
 * origin, content that passes the HTML check; a private one narrowed to
 * one recipient names no other).
 */


#include "../src/keys/ngx_http_tent_keys.c"
#include "../src/posts/ngx_http_tent_post_types.c"
#include "../src/posts/ngx_http_tent_post_envelope.c"
#include "../src/activitypub/ngx_http_tent_ap_html.c"
#include "../src/activitypub/ngx_http_tent_ap_map.c"
#include "../src/activitypub/ngx_http_tent_ap_map_in.c"
#include "../src/activitypub/ngx_http_tent_ap_util.c"

#include "fuzz.h"

#include <time.h>


/* ngx_times.c is not linked: the calendar as nginx's gives it */

void
ngx_gmtime(time_t t, ngx_tm_t *tp)
{
    gmtime_r(&t, tp);
    tp->tm_year += 1900;
    tp->tm_mon += 1;
}


static void
ngx_fuzz_utf8(ngx_str_t *s)
{
    json_t  *j;

    if (s->len == 0) {
        return;
    }

    j = json_stringn((char *) s->data, s->len);
    ngx_fuzz_assert(j != NULL);
    json_decref(j);
}


static ngx_uint_t
ngx_fuzz_is(u_char *p, u_char *last, const char *s)
{
    size_t  n;

    n = strlen(s);

    return (size_t) (last - p) >= n && memcmp(p, s, n) == 0;
}


/* our HTML, as we write it: the allow-list, balanced */

static void
ngx_fuzz_html_check(ngx_str_t *s)
{
    u_char       *p, *last, *q, *name;
    size_t        n;
    ngx_uint_t    depth, i, found;
    const char   *stack[64];

    static const char  *tags[] = {
        "p", "br", "a", "span", "strong", "em", "b", "i", "ul", "ol", "li",
        "blockquote", "code", "pre", NULL
    };

    ngx_fuzz_utf8(s);

    p = s->data;
    last = s->data + s->len;
    depth = 0;

    while (p < last) {

        ngx_fuzz_assert(*p != '>');

        if (*p == '&') {
            ngx_fuzz_assert(ngx_fuzz_is(p, last, "&amp;")
                            || ngx_fuzz_is(p, last, "&lt;")
                            || ngx_fuzz_is(p, last, "&gt;")
                            || ngx_fuzz_is(p, last, "&quot;")
                            || ngx_fuzz_is(p, last, "&#39;"));
        }

        if (*p != '<') {
            p++;
            continue;
        }

        q = p + 1;

        if (q < last && *q == '/') {
            q++;
        }

        name = q;

        while (q < last && *q >= 'a' && *q <= 'z') {
            q++;
        }

        n = q - name;
        found = 0;

        for (i = 0; tags[i]; i++) {
            if (strlen(tags[i]) == n && memcmp(tags[i], name, n) == 0) {
                found = 1;
                break;
            }
        }

        ngx_fuzz_assert(found);
        ngx_fuzz_assert(q < last);

        if (p[1] == '/') {
            ngx_fuzz_assert(*q == '>');
            ngx_fuzz_assert(depth > 0 && strcmp(stack[depth - 1], tags[i])
                                         == 0);
            depth--;
            p = q + 1;
            continue;
        }

        /* the attributes we write, and nothing else */

        if (strcmp(tags[i], "a") == 0 && *q == ' ') {
            ngx_fuzz_assert(ngx_fuzz_is(q, last, " href=\"http://")
                            || ngx_fuzz_is(q, last, " href=\"https://")
                            || ngx_fuzz_is(q, last, " href=\"mailto:"));
            q += 7;

            while (q < last && *q != '"') {
                ngx_fuzz_assert(*q > ' ' && *q != '<' && *q != '>'
                                && *q != '\'' && *q != 0x7f);
                q++;
            }

            ngx_fuzz_assert(ngx_fuzz_is(q, last,
                                        "\" rel=\"nofollow noopener "
                                        "noreferrer\""));
            q += sizeof("\" rel=\"nofollow noopener noreferrer\"") - 1;

        } else if (strcmp(tags[i], "span") == 0 && *q == ' ') {
            ngx_fuzz_assert(ngx_fuzz_is(q, last, " class=\""));
            q += 8;

            while (q < last && *q != '"') {
                ngx_fuzz_assert((*q >= 'a' && *q <= 'z') || *q == '-'
                                || *q == ' ');
                q++;
            }

            ngx_fuzz_assert(q < last);
            q++;
        }

        ngx_fuzz_assert(q < last && *q == '>');
        p = q + 1;

        if (strcmp(tags[i], "br") != 0) {
            ngx_fuzz_assert(depth < 64);
            stack[depth++] = tags[i];
        }
    }

    ngx_fuzz_assert(depth == 0);
}


static void
ngx_fuzz_html(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    size_t      max;
    ngx_str_t   in, out;

    if (size < 2) {
        return;
    }

    max = (data[1] == 255) ? 65536 : (size_t) data[1] * 16 + 1;

    in.data = ngx_fuzz_dup(data + 2, size - 2);
    in.len = size - 2;

    ngx_fuzz_assert(ngx_http_tent_ap_html(pool, &in, max, &out) == NGX_OK);
    ngx_fuzz_assert(out.len <= max);
    ngx_fuzz_html_check(&out);

    ngx_fuzz_assert(ngx_http_tent_ap_text(pool, &in, max, &out) == NGX_OK);
    ngx_fuzz_assert(out.len <= max);
    ngx_fuzz_utf8(&out);

    ngx_fuzz_assert(ngx_http_tent_ap_text_html(pool, &in, max, &out)
                    == NGX_OK);
    ngx_fuzz_assert(out.len <= max);
    ngx_fuzz_html_check(&out);

    free(in.data);
}


static ngx_str_t  ngx_fuzz_actor = ngx_string("https://m.example/users/bob");
static ngx_str_t  ngx_fuzz_api = ngx_string("https://alice.example/tent");
static ngx_str_t  ngx_fuzz_entity = ngx_string("https://alice.example");


static void
ngx_fuzz_object_check(json_t *obj)
{
    json_t     *v;
    ngx_str_t   s;

    v = json_object_get(obj, "id");
    ngx_fuzz_assert(json_is_string(v));
    ngx_fuzz_assert(strncmp(json_string_value(v), "https://alice.example/tent/"
                            "posts/", 32) == 0);

    v = json_object_get(obj, "content");

    if (v) {
        ngx_fuzz_assert(json_is_string(v));
        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);
        ngx_fuzz_html_check(&s);
    }

    v = json_object_get(obj, "summary");

    if (v) {
        ngx_fuzz_assert(json_is_string(v));
        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);
        ngx_fuzz_html_check(&s);
    }

    ngx_fuzz_assert(json_is_array(json_object_get(obj, "to")));
    ngx_fuzz_assert(json_is_array(json_object_get(obj, "cc")));
}


static void
ngx_fuzz_json(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    json_t        *in, *out, *valid, *act;
    ngx_uint_t     kind;
    const char    *error;
    json_error_t   err;

    in = json_loadb((const char *) data + 1, size - 1, JSON_REJECT_DUPLICATES,
                    &err);
    if (in == NULL) {
        return;
    }

    error = NULL;
    out = ngx_http_tent_ap_to_post(pool, in, &ngx_fuzz_actor, &error);

    if (out == NULL) {
        ngx_fuzz_assert(error != NULL);

    } else {
        ngx_fuzz_assert(error == NULL);

        error = NULL;
        valid = ngx_http_tent_post_validate(out, 1, &error);
        if (valid == NULL) {
            fprintf(stderr, "not a valid post: %s\n", error);
        }
        ngx_fuzz_assert(valid != NULL);
        json_decref(valid);

        ngx_fuzz_assert(json_is_object(json_object_get(out, "activitypub")));
        json_decref(out);
    }

    out = ngx_http_tent_ap_object(pool, &ngx_fuzz_api, &ngx_fuzz_entity, in);

    if (out) {
        ngx_fuzz_object_check(out);
        json_decref(out);
    }

    for (kind = 0; kind < 3; kind++) {
        act = ngx_http_tent_ap_activity(pool, &ngx_fuzz_api, &ngx_fuzz_entity,
                                        in, kind);
        if (act == NULL) {
            continue;
        }

        ngx_fuzz_assert(json_is_string(json_object_get(act, "id")));
        ngx_fuzz_object_check(json_object_get(act, "object"));

        /* one recipient's copy names no one else */

        out = ngx_http_tent_ap_narrow(act, &ngx_fuzz_actor);
        ngx_fuzz_assert(out != NULL);

        if (out != act) {
            ngx_fuzz_assert(json_array_size(json_object_get(out, "to")) == 1);
            ngx_fuzz_assert(json_array_size(json_object_get(out, "cc")) == 0);
            ngx_fuzz_assert(json_array_size(json_object_get(
                                json_object_get(out, "object"), "tag"))
                            <= 1);
        }

        json_decref(out);
        json_decref(act);
    }

    json_decref(in);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ngx_pool_t  *pool;

    if (size < 1) {
        return 0;
    }

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    if (pool == NULL) {
        return 0;
    }

    if (data[0] & 1) {
        ngx_fuzz_json(pool, data, size);

    } else {
        ngx_fuzz_html(pool, data, size);
    }

    ngx_destroy_pool(pool);

    return 0;
}
