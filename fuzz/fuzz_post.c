
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The validation of posts sent by clients (every type's content schema,
 * permissions, mentions, licenses) on any JSON, as POST /posts and an
 * import see it.  Input: a JSON document.  What is accepted must come
 * back as an object with a string type and an object content.
 */


#include "../src/posts/ngx_http_tent_post_types.c"
#include "../src/posts/ngx_http_tent_post_envelope.c"
#include "../src/keys/ngx_http_tent_keys.c"

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t        *in, *out;
    ngx_uint_t     import;
    const char    *error;
    json_error_t   err;

    in = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, &err);

    if (in == NULL) {
        return 0;
    }

    for (import = 0; import < 2; import++) {
        error = NULL;
        out = ngx_http_tent_post_validate(in, import, &error);

        if (out == NULL) {
            ngx_fuzz_assert(error != NULL);
            continue;
        }

        ngx_fuzz_assert(json_is_object(out));
        ngx_fuzz_assert(json_is_string(json_object_get(out, "type")));
        ngx_fuzz_assert(json_is_object(json_object_get(out, "content")));
        ngx_fuzz_assert(json_is_object(json_object_get(out, "permissions")));
        ngx_fuzz_assert(json_is_array(json_object_get(out, "mentions")));
        ngx_fuzz_assert(import || json_object_get(out, "id") == NULL);

        json_decref(out);
    }

    (void) ngx_http_tent_post_published_at(json_object_get(in,
                                                           "published_at"),
                                           NGX_FUZZ_NOW);

    json_decref(in);

    return 0;
}
