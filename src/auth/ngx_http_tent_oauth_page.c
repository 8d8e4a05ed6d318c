
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The authorize page's HTML (ngx_http_tent_oauth.c reads the request and
 * decides): the app by its name, site and description, each scope asked
 * for in plain words, the types of posts and profile sections it may
 * use, Approve and Deny; and the look it shares with the sign-in form
 * of a provisioning server and with the web page (www/web/app.css): one
 * inline style, allowed by its hash in the page's CSP, no script.
 * Everything the app supplied is escaped.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_oauth_private.h"
#include "ngx_http_tent_json.h"

#include <openssl/evp.h>


typedef struct {
    ngx_str_t   name;
    char       *words;
} ngx_http_tent_words_t;


/* what each scope lets an app do, as the owner would say it */

static ngx_http_tent_words_t  ngx_http_tent_scope_words[] = {
    { ngx_string("read_posts"),
      "read your posts, private ones too, of the types below" },
    { ngx_string("write_posts"),
      "publish, edit and delete posts of the types below" },
    { ngx_string("import_posts"),
      "import posts as yours, with their own ids and dates" },
    { ngx_string("read_profile"), "read your private profile sections" },
    { ngx_string("write_profile"), "change your profile" },
    { ngx_string("read_followers"), "see who follows you" },
    { ngx_string("write_followers"), "remove your followers" },
    { ngx_string("read_followings"), "see whom you follow" },
    { ngx_string("write_followings"),
      "follow and unfollow entities for you" },
    { ngx_string("read_groups"), "see your groups" },
    { ngx_string("write_groups"), "make, change and delete your groups" },
    { ngx_string("read_permissions"), "see who may read each post" },
    { ngx_string("write_permissions"), "change who may read your posts" },
    { ngx_string("read_apps"), "see the apps you authorized" },
    { ngx_string("write_apps"), "register, change and remove apps" },
    { ngx_string("follow_ui"), "show you entities to follow" },
    { ngx_string("read_secrets"), "read the apps' secret keys" },
    { ngx_string("write_secrets"), "change the apps' secret keys" },
    { ngx_string("read_blocks"), "see whom you block" },
    { ngx_string("write_blocks"), "block and unblock entities" },
    { ngx_null_string, NULL }
};


/* types by their base (any version) */

static ngx_http_tent_words_t  ngx_http_tent_type_words[] = {
    { ngx_string("all"), "posts of every type" },
    { ngx_string("https://tent.io/types/post/status/"), "statuses" },
    { ngx_string("https://tent.io/types/post/essay/"), "essays" },
    { ngx_string("https://tent.io/types/post/photo/"), "photos" },
    { ngx_string("https://tent.io/types/post/album/"), "albums" },
    { ngx_string("https://tent.io/types/post/repost/"), "reposts" },
    { ngx_string("https://tent.io/types/post/profile/"),
      "notes of profile changes" },
    { ngx_string("https://tent.io/types/post/delete/"), "deletions" },
    { ngx_string("https://tent.io/types/post/follower/"),
      "notes of new followers" },
    { ngx_string("https://tent.io/types/post/following/"),
      "notes of follows" },
    { ngx_null_string, NULL }
};


static ngx_http_tent_words_t  ngx_http_tent_info_words[] = {
    { ngx_string("all"), "every section of your profile" },
    { ngx_string("https://tent.io/types/info/basic/"),
      "your basic profile: name, bio, avatar" },
    { ngx_string("https://tent.io/types/info/core/"),
      "your core profile: entity and servers" },
    { ngx_null_string, NULL }
};


/*
 * the look of www/web/app.css, light and dark by the system's setting;
 * --edge, a field's border, contrasts 3:1 with what is behind it
 */

static ngx_str_t  ngx_http_tent_oauth_css = ngx_string(
    ":root{--fg:#1d2126;--muted:#5b6570;--bg:#f4f5f7;--card:#fff;"
    "--line:#d5d9de;--edge:#7d8690;--accent:#1f5fbf;--bad:#a4161a;"
    "color-scheme:light dark;"
    "font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#a3acb6;"
    "--bg:#15181c;--card:#1f2328;--line:#353b43;--edge:#6b7580;"
    "--accent:#7fb0ff;--bad:#ff8a8a}}"
    "*{box-sizing:border-box}"
    "body{margin:0 auto;max-width:40rem;padding:1rem;color:var(--fg);"
    "background:var(--bg)}"
    "main{background:var(--card);border:1px solid var(--line);"
    "border-radius:.5rem;padding:1rem 1.25rem}"
    "h1{font-size:1.5rem;margin:0 0 .5rem;line-height:1.25;"
    "overflow-wrap:anywhere}"
    "h2{font-size:1.05rem;margin:1rem 0 .25rem}"
    "p,dd{overflow-wrap:anywhere}"
    ".muted,dt{color:var(--muted)}"
    "dl{margin:.5rem 0}dd{margin:0 0 .4rem}"
    "ul{margin:.25rem 0;padding-left:1.25rem}"
    "li code{color:var(--muted);font-size:.85em;margin-left:.4rem;"
    "overflow-wrap:anywhere}"
    ".alert{color:var(--bad);border:1px solid var(--bad);"
    "border-radius:.375rem;padding:.5rem .75rem}"
    "label{display:block;font-weight:600;margin:.75rem 0 .25rem}"
    "input[type=password]{width:100%;font:inherit;color:inherit;"
    "background:var(--bg);border:1px solid var(--edge);"
    "border-radius:.375rem;padding:.45rem .6rem}"
    ".row{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:1rem}"
    "button{font:inherit;min-height:2.5rem;padding:.35rem 1.2rem;"
    "border-radius:.375rem;border:1px solid var(--accent);"
    "background:var(--accent);color:var(--card);cursor:pointer}"
    "button.secondary{background:transparent;color:var(--accent)}"
    ":focus-visible{outline:3px solid var(--accent);outline-offset:2px}");


/*
 * The page's Content-Security-Policy: nothing but its one inline style,
 * allowed by its SHA-256, and no framing.  Made once a process.
 */

ngx_int_t
ngx_http_tent_oauth_csp(ngx_str_t *csp)
{
    u_char        *p;
    ngx_str_t      src, dst;
    unsigned int   len;
    u_char         md[EVP_MAX_MD_SIZE];

    static u_char  b64[ngx_base64_encoded_length(EVP_MAX_MD_SIZE)];
    static u_char  buf[sizeof("default-src 'none'; style-src 'sha256-'; "
                              "frame-ancestors 'none'")
                       + sizeof(b64)];
    static size_t  made;

    if (made == 0) {
        if (EVP_Digest(ngx_http_tent_oauth_css.data,
                       ngx_http_tent_oauth_css.len, md, &len, EVP_sha256(),
                       NULL)
            != 1)
        {
            return NGX_ERROR;
        }

        src.data = md;
        src.len = len;
        dst.data = b64;
        ngx_encode_base64(&dst, &src);

        p = ngx_sprintf(buf, "default-src 'none'; style-src 'sha256-%V'; "
                        "frame-ancestors 'none'", &dst);
        made = p - buf;
    }

    csp->data = buf;
    csp->len = made;

    return NGX_OK;
}


/* <!DOCTYPE html> to <main>: the title and the style */

ngx_int_t
ngx_http_tent_oauth_head(ngx_http_request_t *r, ngx_chain_t ***last,
    const char *title)
{
    ngx_str_t  t;

    t.data = (u_char *) title;
    t.len = ngx_strlen(title);

    ngx_http_tent_lit(r, last,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<title>");
    ngx_http_tent_esc(r, last, &t);
    ngx_http_tent_lit(r, last, "</title>\n<style>");

    if (ngx_http_tent_page_add(r, last, &ngx_http_tent_oauth_css, 0)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the page");
    }

    ngx_http_tent_lit(r, last, "</style></head>\n<body>\n<main>\n");

    return NGX_OK;
}


/* an item in words, its name after it; an unknown one by its name */

static ngx_int_t
ngx_http_tent_oauth_item(ngx_http_request_t *r, ngx_chain_t ***last,
    ngx_http_tent_words_t *table, ngx_uint_t prefix, ngx_str_t *item,
    const char *unknown)
{
    ngx_str_t               w;
    ngx_http_tent_words_t  *t;

    for (t = table; t->words; t++) {
        if (prefix ? item->len >= t->name.len
                     && ngx_strncmp(item->data, t->name.data, t->name.len)
                        == 0
                       && (t->name.len == item->len
                           || t->name.data[t->name.len - 1] == '/')
                   : item->len == t->name.len
                     && ngx_strncmp(item->data, t->name.data, item->len)
                        == 0)
        {
            break;
        }
    }

    ngx_http_tent_lit(r, last, "<li>");

    if (t->words) {
        w.data = (u_char *) t->words;
        w.len = ngx_strlen(t->words);
        ngx_http_tent_esc(r, last, &w);

    } else if (unknown) {
        w.data = (u_char *) unknown;
        w.len = ngx_strlen(unknown);
        ngx_http_tent_esc(r, last, &w);
    }

    ngx_http_tent_lit(r, last, " <code>");
    ngx_http_tent_esc(r, last, item);
    ngx_http_tent_lit(r, last, "</code></li>\n");

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_oauth_list(ngx_http_request_t *r, ngx_chain_t ***last,
    const char *title, ngx_str_t *list, ngx_http_tent_words_t *table,
    ngx_uint_t prefix, const char *unknown)
{
    u_char     *p;
    ngx_str_t   item, t;

    if (list->len == 0) {
        return NGX_OK;
    }

    t.data = (u_char *) title;
    t.len = ngx_strlen(title);

    ngx_http_tent_lit(r, last, "<h2>");
    ngx_http_tent_esc(r, last, &t);
    ngx_http_tent_lit(r, last, "</h2>\n<ul>\n");

    p = list->data;

    while (ngx_http_tent_next_item(&p, list->data + list->len, &item)) {
        if (ngx_http_tent_oauth_item(r, last, table, prefix, &item, unknown)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ngx_http_tent_lit(r, last, "</ul>\n");

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_oauth_page(ngx_http_request_t *r, ngx_http_tent_oauth_t *oa)
{
    ngx_str_t             name, url, desc;
    ngx_chain_t          *out, **last;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    (void) ngx_http_tent_json_str(oa->app, "name", &name);
    (void) ngx_http_tent_json_str(oa->app, "url", &url);
    (void) ngx_http_tent_json_str(oa->app, "description", &desc);

    out = NULL;
    last = &out;

    if (ngx_http_tent_oauth_head(r, &last, "Authorize an app") != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (name.len) {
        ngx_http_tent_lit(r, &last, "<h1>Authorize <q>");
        ngx_http_tent_esc(r, &last, &name);
        ngx_http_tent_lit(r, &last, "</q>?</h1>\n");

    } else {
        ngx_http_tent_lit(r, &last, "<h1>Authorize an app without a name?"
                          "</h1>\n");
    }

    ngx_http_tent_lit(r, &last, "<p class=\"muted\">It asks to act for <code>");
    ngx_http_tent_esc(r, &last, &ctx->entity);
    ngx_http_tent_lit(r, &last, "</code>.</p>\n");

    if (desc.len) {
        ngx_http_tent_lit(r, &last, "<p>");
        ngx_http_tent_esc(r, &last, &desc);
        ngx_http_tent_lit(r, &last, "</p>\n");
    }

    ngx_http_tent_lit(r, &last, "<dl>\n<dt>Its site</dt><dd><code>");
    ngx_http_tent_esc(r, &last, &url);
    ngx_http_tent_lit(r, &last, "</code></dd>\n<dt>It will return to</dt>"
                      "<dd><code>");
    ngx_http_tent_esc(r, &last, &oa->redirect_uri);
    ngx_http_tent_lit(r, &last, "</code></dd>\n</dl>\n");

    if (ngx_http_tent_oauth_list(r, &last, "It will be able to", &oa->scope,
                                 ngx_http_tent_scope_words, 0,
                                 "nothing: a name this server does not "
                                 "know, left out")
           != NGX_OK
        || ngx_http_tent_oauth_list(r, &last,
                                    "Types of posts it may read and write",
                                    &oa->post_types,
                                    ngx_http_tent_type_words, 1,
                                    "posts of the type")
           != NGX_OK
        || ngx_http_tent_oauth_list(r, &last,
                                    "Profile sections it may read and "
                                    "write",
                                    &oa->info_types,
                                    ngx_http_tent_info_words, 1,
                                    "the section")
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "listing the scopes and types");
    }

    if (ngx_http_tent_oauth_fields(r, &last, oa) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the form's fields");
    }

    ngx_http_tent_lit(r, &last,
        "<div class=\"row\">\n"
        "<button name=\"decision\" value=\"approve\">Approve</button>\n"
        "<button name=\"decision\" value=\"deny\" class=\"secondary\">"
        "Deny</button>\n</div>\n</form>\n</main>\n</body></html>\n");

    return ngx_http_tent_oauth_send(r, out, NGX_HTTP_OK);
}
