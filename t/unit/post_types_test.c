
/*
 * Standalone check of src/posts/ngx_http_tent_post_types.c: the file and
 * keys.c (for ngx_http_tent_type_base) are compiled in here, with
 * stubs for what keys.c needs of nginx: ngx_pnalloc, and the CRC-32
 * table of ngx_crc32_short (made at start, as ngx_crc32.c has it).
 * t/unit/run.sh builds and runs it; `make test` runs that.
 */


#include "../../src/keys/ngx_http_tent_keys.c"
#include "../../src/posts/ngx_http_tent_post_types.c"
#include "../../src/posts/ngx_http_tent_post_envelope.c"

#include <stdio.h>


static int  failures;
static int  checks;

static uint32_t   crc32_nibbles[16];
uint32_t         *ngx_crc32_table_short = crc32_nibbles;


void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return malloc(size);
}


static json_t *
parse(const char *text)
{
    json_t        *json;
    json_error_t   err;

    json = json_loads(text, 0, &err);
    if (json == NULL) {
        fprintf(stderr, "bad test JSON: %s: %s\n", text, err.text);
        exit(2);
    }

    return json;
}


/* "want" NULL: must pass; else the error must contain "want" */

static json_t *
check(int line, const char *text, ngx_uint_t import, const char *want)
{
    json_t      *post, *out;
    const char  *error;

    checks++;
    post = parse(text);
    error = "unset";
    out = ngx_http_tent_post_validate(post, import, &error);
    json_decref(post);

    if (want == NULL && out == NULL) {
        fprintf(stderr, "line %d: rejected: %s\n", line,
                error ? error : "(out of memory)");
        failures++;

    } else if (want && out) {
        fprintf(stderr, "line %d: accepted, wanted \"%s\"\n", line, want);
        failures++;

    } else if (want && (error == NULL || strstr(error, want) == NULL)) {
        fprintf(stderr, "line %d: error \"%s\", wanted \"%s\"\n", line,
                error ? error : "(null)", want);
        failures++;
    }

    return out;
}


static void
same(int line, json_t *out, const char *expected)
{
    json_t  *e;
    char    *got;

    checks++;
    e = parse(expected);

    if (out == NULL || !json_equal(out, e)) {
        got = out ? json_dumps(out, JSON_SORT_KEYS) : NULL;
        fprintf(stderr, "line %d: got %s\n   wanted %s\n", line,
                got ? got : "NULL", expected);
        free(got);
        failures++;
    }

    json_decref(e);
    json_decref(out);
}


static void
ok(int line, int cond, const char *what)
{
    checks++;

    if (!cond) {
        fprintf(stderr, "line %d: %s\n", line, what);
        failures++;
    }
}


/* out of memory after "budget" allocations: every failure path runs */

static int  budget = -1;


static void *
tight_malloc(size_t size)
{
    if (budget == 0) {
        return NULL;
    }

    if (budget > 0) {
        budget--;
    }

    return malloc(size);
}


static void
out_of_memory(int line, const char *text, ngx_uint_t import)
{
    int          n;
    json_t      *post, *out;
    const char  *error;

    post = parse(text);

    for (n = 0; /* void */; n++) {
        checks++;
        budget = n;
        error = "unset";
        out = ngx_http_tent_post_validate(post, import, &error);
        budget = -1;

        if (out) {
            json_decref(out);
            break;
        }

        if (error != NULL) {
            fprintf(stderr, "line %d: after %d allocations: \"%s\"\n",
                    line, n, error);
            failures++;
            break;
        }
    }

    json_decref(post);
}


static char *
repeat(const char *head, const char *unit, int n, const char *tail)
{
    char    *s, *p;
    size_t   ulen;

    ulen = strlen(unit);
    s = malloc(strlen(head) + ulen * n + strlen(tail) + 1);
    p = stpcpy(s, head);

    while (n--) {
        p = stpcpy(p, unit);
    }

    strcpy(p, tail);

    return s;
}


#define S  "{\"type\":\"https://tent.io/types/post/status/v0.1.0\","
#define E  "{\"type\":\"https://tent.io/types/post/essay/v0.1.0\","
#define P  "{\"type\":\"https://tent.io/types/post/photo/v0.1.0\","
#define A  "{\"type\":\"https://tent.io/types/post/album/v0.1.0\","
#define R  "{\"type\":\"https://tent.io/types/post/repost/v0.1.0\","
#define PR "{\"type\":\"https://tent.io/types/post/profile/v0.1.0\","
#define D  "{\"type\":\"https://tent.io/types/post/delete/v0.1.0\","
#define FR "{\"type\":\"https://tent.io/types/post/follower/v0.1.0\","
#define FG "{\"type\":\"https://tent.io/types/post/following/v0.1.0\","

#define T(text, import, want)                                                \
    json_decref(check(__LINE__, text, import, want))


int
main(void)
{
    char       *s;
    json_t     *v;
    ngx_str_t   t;
    uint32_t    c;
    int         i, k;

    /* CRC-32 (reflected, 0xedb88320) of each 4-bit value */

    for (i = 0; i < 16; i++) {
        c = i;
        for (k = 0; k < 4; k++) {
            c = (c & 1) ? (c >> 1) ^ 0xedb88320 : c >> 1;
        }
        crc32_nibbles[i] = c;
    }

    /* type_is */

    ngx_str_set(&t, "https://tent.io/types/post/status/v0.1.0");
    ok(__LINE__, ngx_http_tent_post_type_is(&t, "status"), "status");
    ok(__LINE__, !ngx_http_tent_post_type_is(&t, "essay"), "not essay");
    ok(__LINE__, !ngx_http_tent_post_type_is(&t, "statu"), "not statu");
    ngx_str_set(&t, "https://tent.io/types/post/status/v0.2.0#reply");
    ok(__LINE__, ngx_http_tent_post_type_is(&t, "status"), "view");
    ngx_str_set(&t, "https://tent.io/types/post/status");
    ok(__LINE__, ngx_http_tent_post_type_is(&t, "status"), "no version");
    ngx_str_set(&t, "https://tent.io/types/post/statusx/v0.1.0");
    ok(__LINE__, !ngx_http_tent_post_type_is(&t, "status"), "statusx");
    ngx_str_set(&t, "http://tent.io/types/post/status/v0.1.0");
    ok(__LINE__, !ngx_http_tent_post_type_is(&t, "status"), "http");

    /* published_at */

    v = json_integer(1700000000000LL);
    ok(__LINE__, ngx_http_tent_post_published_at(v, 1700000000)
                 == 1700000000, "ms");
    json_decref(v);
    v = json_integer(1700000123);
    ok(__LINE__, ngx_http_tent_post_published_at(v, 1700000000)
                 == 1700000123, "seconds");
    json_decref(v);
    v = json_integer(1700000000LL + 1000000000LL);
    ok(__LINE__, ngx_http_tent_post_published_at(v, 1700000000)
                 == 2700000000LL, "exactly 10^9 ahead stays seconds");
    json_decref(v);
    ok(__LINE__, ngx_http_tent_post_published_at(NULL, 1700000000)
                 == 1700000000, "absent");

    /* common fields */

    T("[]", 0, "JSON object");
    T("{\"content\":{}}", 0, "type is required");
    T("{\"type\":5,\"content\":{}}", 0, "type must be a URI");
    T("{\"type\":\"not a uri\",\"content\":{}}", 0, "type must be a URI");
    T("{\"type\":\"status\",\"content\":{}}", 0, "type must be a URI");
    s = repeat("{\"type\":\"https://x.example/", "a", 500,
               "\",\"content\":{}}");
    T(s, 0, "type must be a URI");
    free(s);
    T(S "\"content\":null}", 0, "content is required");
    T(S "\"x\":1}", 0, "content is required");
    T(S "\"content\":[]}", 0, "content must be an object");
    T(S "\"content\":{\"text\":\"a\"},\"published_at\":\"1\"}", 0,
      "published_at");
    T(S "\"content\":{\"text\":\"a\"},\"published_at\":1.5}", 0,
      "published_at");
    T(S "\"content\":{\"text\":\"a\"},\"published_at\":-1}", 0,
      "published_at");
    T(S "\"content\":{\"text\":\"a\"},\"views\":[]}", 0, "views");
    T(S "\"content\":{\"text\":\"a\"},\"permissions\":true}", 0,
      "permissions must be an object");
    T(S "\"content\":{\"text\":\"a\"},\"permissions\":{\"public\":1}}", 0,
      "permissions public");
    T(S "\"content\":{\"text\":\"a\"},\"permissions\":{\"groups\":[\"g\"]}}",
      0, "permissions groups");
    T(S "\"content\":{\"text\":\"a\"},\"permissions\":{\"groups\":{}}}",
      0, "permissions groups");
    T(S "\"content\":{\"text\":\"a\"},"
      "\"permissions\":{\"entities\":{\"alice\":true}}}", 0,
      "permissions entities");
    T(S "\"content\":{\"text\":\"a\"},"
      "\"permissions\":{\"entities\":{\"https://a.example\":1}}}", 0,
      "permissions entities");
    T(S "\"content\":{\"text\":\"a\"},\"licenses\":\"x\"}", 0, "licenses");
    T(S "\"content\":{\"text\":\"a\"},\"licenses\":[\"no uri\"]}", 0,
      "licenses");
    s = repeat(S "\"content\":{\"text\":\"a\"},\"licenses\":[",
               "\"http://l.example/\",", 32, "\"http://l.example/\"]}");
    T(s, 0, "licenses");
    free(s);
    s = repeat(S "\"content\":{\"text\":\"a\"},\"licenses\":[",
               "\"http://l.example/\",", 31, "\"http://l.example/\"]}");
    T(s, 0, NULL);
    free(s);
    T(S "\"content\":{\"text\":\"a\"},\"mentions\":{}}", 0, "mentions");
    T(S "\"content\":{\"text\":\"a\"},\"mentions\":[\"x\"]}", 0, "mentions");
    T(S "\"content\":{\"text\":\"a\"},\"mentions\":[{\"post\":\"p\"}]}", 0,
      "mention entity");
    T(S "\"content\":{\"text\":\"a\"},"
      "\"mentions\":[{\"entity\":\"ftp://a.example\"}]}", 0, "mention entity");
    T(S "\"content\":{\"text\":\"a\"},"
      "\"mentions\":[{\"entity\":\"https://a.example\",\"post\":7}]}", 0,
      "mention post");
    s = repeat(S "\"content\":{\"text\":\"a\"},\"mentions\":[",
               "{\"entity\":\"https://a.example\"},", 256,
               "{\"entity\":\"https://a.example\"}]}");
    T(s, 0, "mentions");
    free(s);

    /* normalization */

    same(__LINE__, check(__LINE__, S "\"content\":{\"text\":\"hi\",\"x\":1},"
                         "\"entity\":\"https://e.example\",\"id\":\"i\","
                         "\"junk\":true,\"version\":3}", 0, NULL),
         S "\"content\":{\"text\":\"hi\",\"x\":1},"
         "\"permissions\":{\"public\":false},\"licenses\":[],"
         "\"mentions\":[]}");

    same(__LINE__, check(__LINE__, S "\"content\":{\"text\":\"hi\"},"
                         "\"published_at\":1700000000000,"
                         "\"permissions\":{\"public\":true,\"x\":1,"
                         "\"groups\":[{\"id\":\"g1\",\"name\":\"n\"}],"
                         "\"entities\":{\"https://a.example\":true,"
                         "\"https://b.example\":false}},"
                         "\"licenses\":[\"http://l.example/\"],"
                         "\"mentions\":[{\"entity\":\"https://a.example\","
                         "\"post\":\"p1\",\"extra\":1},"
                         "{\"entity\":\"https://b.example\",\"post\":null}],"
                         "\"views\":{\"v\":{}}}", 0, NULL),
         S "\"content\":{\"text\":\"hi\"},\"published_at\":1700000000000,"
         "\"permissions\":{\"public\":true,\"groups\":[{\"id\":\"g1\"}],"
         "\"entities\":{\"https://a.example\":true}},"
         "\"licenses\":[\"http://l.example/\"],"
         "\"mentions\":[{\"entity\":\"https://a.example\",\"post\":\"p1\"},"
         "{\"entity\":\"https://b.example\"}],\"views\":{\"v\":{}}}");

    same(__LINE__, check(__LINE__, S "\"content\":{\"text\":\"hi\"},"
                         "\"permissions\":null,\"licenses\":null,"
                         "\"entity\":\"https://e.example\",\"id\":\"i-1\","
                         "\"received_at\":5,"
                         "\"app\":{\"name\":\"A\",\"url\":\"https://a\","
                         "\"id\":\"x\"}}", 1, NULL),
         S "\"content\":{\"text\":\"hi\"},"
         "\"permissions\":{\"public\":false},\"licenses\":[],"
         "\"mentions\":[],\"entity\":\"https://e.example\",\"id\":\"i-1\","
         "\"received_at\":5,\"app\":{\"name\":\"A\",\"url\":\"https://a\"}}");

    T(S "\"content\":{\"text\":\"a\"},\"id\":\"a/b\"}", 0, NULL);
    T(S "\"content\":{\"text\":\"a\"},\"id\":\"a/b\"}", 1, "id must be");
    T(S "\"content\":{\"text\":\"a\"},\"entity\":\"x\"}", 1, "entity must");
    T(S "\"content\":{\"text\":\"a\"},\"received_at\":\"x\"}", 1,
      "received_at");
    T(S "\"content\":{\"text\":\"a\"},\"app\":[]}", 1, "app must");
    T(S "\"content\":{\"text\":\"a\"},\"app\":{\"name\":1}}", 1, "app name");

    /* status */

    T(S "\"content\":{}}", 0, "status text or location is required");
    T(S "\"content\":{\"text\":null}}", 0, "status text or location");
    T(S "\"content\":{\"text\":5}}", 0, "status text must be a string");
    T(S "\"content\":{\"text\":\"\"}}", 0, NULL);
    s = repeat(S "\"content\":{\"text\":\"", "\xc3\xa9", 256, "\"}}");
    T(s, 0, NULL);
    free(s);
    s = repeat(S "\"content\":{\"text\":\"", "\xc3\xa9", 257, "\"}}");
    T(s, 0, "status text is longer than 256 characters");
    free(s);
    s = repeat(S "\"content\":{\"text\":\"", "\xf0\x9f\x98\x80", 256, "\"}}");
    T(s, 0, NULL);
    free(s);
    s = repeat(S "\"content\":{\"text\":\"", "a", 257, "\"}}");
    T(s, 0, "longer than 256");
    free(s);
    s = repeat(S "\"content\":{\"text\":\"", "\\u00e9", 256, "\"}}");
    T(s, 0, NULL);
    free(s);
    T(S "\"content\":{\"location\":{\"type\":\"Point\","
      "\"coordinates\":[1.5,-2]}}}", 0, NULL);
    T(S "\"content\":{\"location\":{\"type\":\"Point\","
      "\"coordinates\":[1.5,-2,3]}}}", 0, "status location");
    T(S "\"content\":{\"location\":{\"type\":\"Point\","
      "\"coordinates\":[1.5,\"2\"]}}}", 0, "status location");
    T(S "\"content\":{\"location\":{\"type\":\"Line\","
      "\"coordinates\":[1,2]}}}", 0, "status location");
    T(S "\"content\":{\"text\":\"a\",\"location\":[1,2]}}", 0,
      "status location");
    T("{\"type\":\"https://tent.io/types/post/status/v0.1.0#reply\","
      "\"content\":{\"text\":\"a\"}}", 0, NULL);

    /* essay */

    T(E "\"content\":{}}", 0, "essay body is required");
    T(E "\"content\":{\"body\":1}}", 0, "essay body must be a string");
    T(E "\"content\":{\"body\":\"b\",\"title\":\"t\",\"excerpt\":\"e\","
      "\"tags\":[\"a\",\"b\"]}}", 0, NULL);
    T(E "\"content\":{\"body\":\"b\",\"tags\":[1]}}", 0, "essay tags");
    T(E "\"content\":{\"body\":\"b\",\"title\":[]}}", 0, "essay title");
    s = repeat(E "\"content\":{\"body\":\"", "a", 65537, "\"}}");
    T(s, 0, "essay body must be");
    free(s);
    s = repeat(E "\"content\":{\"body\":\"", "a", 65536, "\"}}");
    T(s, 0, NULL);
    free(s);
    s = repeat(E "\"content\":{\"body\":\"b\",\"tags\":[", "\"t\",", 1024,
               "\"t\"]}}");
    T(s, 0, "essay tags");
    free(s);

    /* photo */

    T(P "\"content\":{}}", 0, NULL);
    T(P "\"content\":{\"caption\":\"c\",\"albums\":[\"a\"],\"tags\":[],"
      "\"exif\":{\"x\":1}}}", 0, NULL);
    T(P "\"content\":{\"exif\":\"x\"}}", 0, "photo exif");
    T(P "\"content\":{\"albums\":\"a\"}}", 0, "photo albums");

    /* album */

    T(A "\"content\":{}}", 0, "album photos is required");
    T(A "\"content\":{\"photos\":[]}}", 0, NULL);
    T(A "\"content\":{\"photos\":[\"p\"],\"title\":\"t\","
      "\"description\":\"d\",\"cover\":\"p\"}}", 0, NULL);
    T(A "\"content\":{\"photos\":[\"p\"],\"cover\":1}}", 0, "album cover");

    /* repost */

    T(R "\"content\":{\"entity\":\"https://a.example\",\"id\":\"x\"}}", 0,
      NULL);
    T(R "\"content\":{\"id\":\"x\"}}", 0, "repost entity is required");
    T(R "\"content\":{\"entity\":\"https://a.example\"}}", 0,
      "repost id is required");
    T(R "\"content\":{\"entity\":\"a.example\",\"id\":\"x\"}}", 0,
      "repost entity must be");
    T(R "\"content\":{\"entity\":\"https://\",\"id\":\"x\"}}", 0,
      "repost entity must be");
    T(R "\"content\":{\"entity\":\"https://a.example\",\"id\":\"a b\"}}", 0,
      "repost id must be");

    /* profile */

    T(PR "\"content\":{\"types\":[\"https://tent.io/types/info/core/v0.1.0\"],"
      "\"action\":\"update\"}}", 0, NULL);
    T(PR "\"content\":{\"types\":[],\"action\":\"bogus\"}}", 0,
      "unknown action");
    T(PR "\"content\":{\"types\":[]}}", 0, "profile action is required");
    T(PR "\"content\":{\"action\":\"create\"}}", 0,
      "profile types is required");
    T(PR "\"content\":{\"types\":[1],\"action\":\"create\"}}", 0,
      "profile types");

    /* delete */

    T(D "\"content\":{\"id\":\"x\"}}", 0, NULL);
    T(D "\"content\":{}}", 0, "delete id is required");
    T(D "\"content\":{\"id\":\"\"}}", 0, "delete id must be");

    /* follower, following */

    T(FR "\"content\":{\"id\":\"x\",\"entity\":\"http://a.example\","
      "\"action\":\"create\"}}", 0, NULL);
    T(FR "\"content\":{\"id\":\"x\",\"entity\":\"http://a.example\","
      "\"action\":\"update\"}}", 0, "unknown action");
    T(FR "\"content\":{\"id\":\"x\",\"entity\":\"http://a.example\"}}", 0,
      "follower action is required");
    T(FG "\"content\":{\"id\":\"x\",\"entity\":\"http://a.example\","
      "\"action\":\"delete\"}}", 0, NULL);
    T(FG "\"content\":{\"entity\":\"http://a.example\","
      "\"action\":\"delete\"}}", 0, "following id is required");
    T(FG "\"content\":{\"id\":\"x\",\"action\":\"delete\"}}", 0,
      "following entity is required");

    /* other types */

    T("{\"type\":\"https://example.com/types/post/custom/v0.1.0\","
      "\"content\":{\"anything\":[1,2,{}]}}", 0, NULL);
    T("{\"type\":\"https://tent.io/types/post/custom/v0.1.0\","
      "\"content\":{}}", 0, NULL);
    T("{\"type\":\"https://example.com/types/post/custom/v0.1.0\","
      "\"content\":\"x\"}", 0, "content must be an object");

    /* out of memory: NULL with a NULL error, nothing leaked */

    json_set_alloc_funcs(tight_malloc, free);

    out_of_memory(__LINE__, S "\"content\":{\"text\":\"hi\"},"
                  "\"published_at\":1,\"permissions\":{\"public\":true,"
                  "\"groups\":[{\"id\":\"g1\"}],"
                  "\"entities\":{\"https://a.example\":true}},"
                  "\"licenses\":[\"http://l.example/\"],"
                  "\"mentions\":[{\"entity\":\"https://a.example\","
                  "\"post\":\"p1\"},{\"entity\":\"https://b.example\"}],"
                  "\"views\":{\"v\":{}},\"entity\":\"https://e.example\","
                  "\"id\":\"i\",\"received_at\":5,"
                  "\"app\":{\"name\":\"A\",\"url\":\"https://a\"}}", 1);

    printf("%d checks, %d failed\n", checks, failures);

    return failures ? 1 : 0;
}
