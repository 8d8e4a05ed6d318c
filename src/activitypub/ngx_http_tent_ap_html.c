
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The fediverse's HTML reduced to an allow-list (or to plain text), and
 * our plain text made HTML (docs/activitypub.md, "Posts both ways").
 *
 * A small tokenizer in the manner of HTML's own (a tag name ends at a
 * blank, '/' or '>', attribute values quoted or not, comments, CDATA
 * and <!...> skipped whole, raw-text elements skipped to their end tag)
 * so that what a browser would see as a tag is seen as one here.  What
 * comes out is rebuilt, never copied: the allowed tags written in our
 * spelling with the allowed attributes only, every character of text
 * and of attribute values decoded and escaped again, the open tags
 * closed in order.  Whatever the tokenizer gets wrong thus ends up as
 * escaped text, never as markup.  No output passes `max` bytes; a
 * truncated output stays balanced and valid UTF-8.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_HTML_DEPTH  32
#define NGX_HTTP_TENT_AP_HREF_MAX    NGX_HTTP_TENT_AP_URL_MAX
#define NGX_HTTP_TENT_AP_REL                                                 \
    " rel=\"nofollow noopener noreferrer\""

/* a stack entry: the tag's index, and whether it was written */
#define NGX_HTTP_TENT_AP_SILENT      0x80


typedef struct {
    const char                 *name;
    size_t                      len;
    ngx_uint_t                  block;     /* text: a paragraph's break */
} ngx_http_tent_ap_tag_t;


typedef struct {
    u_char                     *buf;
    size_t                      len;
    size_t                      cap;
    size_t                      closing;   /* what the open tags' ends need */
    ngx_uint_t                  text;
    ngx_uint_t                  full;
    ngx_uint_t                  error;
    ngx_uint_t                  plain;     /* hrefs of our text: no refs */
    ngx_uint_t                  pre;
    ngx_uint_t                  depth;
    u_char                      stack[NGX_HTTP_TENT_AP_HTML_DEPTH];
} ngx_http_tent_ap_out_t;


/* the allow-list; "br" is void */

#define NGX_HTTP_TENT_AP_TAG_BR    1
#define NGX_HTTP_TENT_AP_TAG_A     2
#define NGX_HTTP_TENT_AP_TAG_SPAN  3
#define NGX_HTTP_TENT_AP_TAG_PRE   13

static ngx_http_tent_ap_tag_t  ngx_http_tent_ap_tags[] = {
    { "p", 1, 2 },
    { "br", 2, 0 },
    { "a", 1, 0 },
    { "span", 4, 0 },
    { "strong", 6, 0 },
    { "em", 2, 0 },
    { "b", 1, 0 },
    { "i", 1, 0 },
    { "ul", 2, 2 },
    { "ol", 2, 2 },
    { "li", 2, 1 },
    { "blockquote", 10, 2 },
    { "code", 4, 0 },
    { "pre", 3, 2 },
    { NULL, 0, 0 }
};


/*
 * Dropped with everything up to their end tag: script and style are raw
 * text to a browser, the others embed or hide content we do not show.
 */

static const char  *ngx_http_tent_ap_drop[] = {
    "script", "style", "iframe", "object", "embed", "applet", "svg",
    "math", "noscript", "noembed", "noframes", "template", "textarea",
    "title", "xmp", "select", "frameset", "head", NULL
};


/* the classes a span keeps (microformats of mentions, as Mastodon's) */

static const char  *ngx_http_tent_ap_classes[] = {
    "h-card", "mention", "u-url", NULL
};


static ngx_int_t ngx_http_tent_ap_out_init(ngx_pool_t *pool,
    ngx_http_tent_ap_out_t *o, size_t in, size_t max, ngx_uint_t text);
static ngx_uint_t ngx_http_tent_ap_put(ngx_http_tent_ap_out_t *o,
    const u_char *p, size_t n);
static void ngx_http_tent_ap_put_cp(ngx_http_tent_ap_out_t *o,
    uint32_t cp);
static void ngx_http_tent_ap_break(ngx_http_tent_ap_out_t *o, ngx_uint_t n);
static u_char *ngx_http_tent_ap_tag(ngx_pool_t *pool,
    ngx_http_tent_ap_out_t *o, u_char *p, u_char *last);
static u_char *ngx_http_tent_ap_skip_to(u_char *p, u_char *last,
    const char *end);
static u_char *ngx_http_tent_ap_attrs(u_char *p, u_char *last,
    ngx_str_t *href, ngx_str_t *class, ngx_uint_t *closed);
static u_char *ngx_http_tent_ap_skip_element(u_char *p, u_char *last,
    ngx_str_t *name);
static void ngx_http_tent_ap_open(ngx_pool_t *pool, ngx_http_tent_ap_out_t *o,
    ngx_uint_t tag, ngx_str_t *href, ngx_str_t *class);
static void ngx_http_tent_ap_close(ngx_http_tent_ap_out_t *o,
    ngx_uint_t tag);
static void ngx_http_tent_ap_pop(ngx_http_tent_ap_out_t *o);
static ngx_int_t ngx_http_tent_ap_href(ngx_pool_t *pool,
    ngx_http_tent_ap_out_t *o, ngx_str_t *value, ngx_str_t *url);
static ngx_int_t ngx_http_tent_ap_sanitize(ngx_pool_t *pool,
    ngx_str_t *in, size_t max, ngx_str_t *out, ngx_uint_t text);


#define ngx_http_tent_ap_blank(c)                                            \
    ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\f' || (c) == '\r')


ngx_int_t
ngx_http_tent_ap_html(ngx_pool_t *pool, ngx_str_t *in, size_t max,
    ngx_str_t *out)
{
    return ngx_http_tent_ap_sanitize(pool, in, max, out, 0);
}


/* the same reading, only the text kept: br, p, li as line breaks */

ngx_int_t
ngx_http_tent_ap_text(ngx_pool_t *pool, ngx_str_t *in, size_t max,
    ngx_str_t *out)
{
    return ngx_http_tent_ap_sanitize(pool, in, max, out, 1);
}


static ngx_int_t
ngx_http_tent_ap_sanitize(ngx_pool_t *pool, ngx_str_t *in, size_t max,
    ngx_str_t *out, ngx_uint_t text)
{
    u_char                  *p, *last;
    uint32_t                 cp;
    ngx_http_tent_ap_out_t   o;

    if (ngx_http_tent_ap_out_init(pool, &o, in->len, max, text) != NGX_OK) {
        return NGX_ERROR;
    }

    p = in->data;
    last = in->data + in->len;

    while (p < last && !o.full) {

        if (*p == '<') {
            p = ngx_http_tent_ap_tag(pool, &o, p, last);

            if (p == NULL) {
                return NGX_ERROR;
            }

            continue;
        }

        if (*p == '&') {
            p = ngx_http_tent_ap_ref(p, last, &cp);

        } else {
            p = ngx_http_tent_ap_char(p, last, &cp);
        }

        ngx_http_tent_ap_put_cp(&o, cp);
    }

    while (o.depth) {
        ngx_http_tent_ap_pop(&o);
    }

    if (text) {
        while (o.len && (o.buf[o.len - 1] == '\n' || o.buf[o.len - 1] == ' '))
        {
            o.len--;
        }
    }

    out->data = o.buf;
    out->len = o.len;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: %s of %uz bytes: %uz bytes%s",
                   text ? "text" : "html", in->len, o.len,
                   o.full ? ", cut at the bound" : "");

    return NGX_OK;
}


/*
 * Our plain text (a status) as the fediverse shows it: escaped, a line
 * break as <br>, http(s) URLs as links, in one paragraph.
 */

ngx_int_t
ngx_http_tent_ap_text_html(ngx_pool_t *pool, ngx_str_t *in, size_t max,
    ngx_str_t *out)
{
    u_char                  *p, *last, *u, *end;
    uint32_t                 cp;
    ngx_str_t                url;
    ngx_http_tent_ap_out_t   o;

    if (ngx_http_tent_ap_out_init(pool, &o, in->len * 2, max, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    o.plain = 1;
    ngx_http_tent_ap_open(pool, &o, 0, NULL, NULL);

    p = in->data;
    last = in->data + in->len;

    while (p < last && !o.full) {

        /* a URL starts a word: "http://" or "https://" and something */

        u = NULL;

        if (p == in->data || !ngx_http_tent_ap_alpha(p[-1])) {

            if (last - p >= 8
                && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0)
            {
                u = p + 8;

            } else if (last - p >= 7
                       && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0)
            {
                u = p + 7;
            }
        }

        if (u && u < last && *u > ' ' && *u != '/') {

            for (end = u; end < last; end++) {
                if (*end <= ' ' || *end == 0x7f || *end == '<' || *end == '>'
                    || *end == '"')
                {
                    break;
                }
            }

            /* punctuation that ends a sentence ends the URL too */

            while (end > u && ngx_strchr(".,;:!?)'", end[-1]) != NULL) {
                end--;
            }

            url.data = p;
            url.len = end - p;

            if (url.len <= NGX_HTTP_TENT_AP_HREF_MAX) {
                ngx_http_tent_ap_open(pool, &o, NGX_HTTP_TENT_AP_TAG_A, &url,
                                      NULL);

                while (p < end && !o.full) {
                    p = ngx_http_tent_ap_char(p, end, &cp);
                    ngx_http_tent_ap_put_cp(&o, cp);
                }

                ngx_http_tent_ap_close(&o, NGX_HTTP_TENT_AP_TAG_A);

                if (o.error) {
                    return NGX_ERROR;
                }

                continue;
            }
        }

        if (*p == '\n') {
            ngx_http_tent_ap_put(&o, (u_char *) "<br>", 4);
            p++;
            continue;
        }

        p = ngx_http_tent_ap_char(p, last, &cp);
        ngx_http_tent_ap_put_cp(&o, cp);
    }

    while (o.depth) {
        ngx_http_tent_ap_pop(&o);
    }

    out->data = o.buf;
    out->len = o.len;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_out_init(ngx_pool_t *pool, ngx_http_tent_ap_out_t *o,
    size_t in, size_t max, ngx_uint_t text)
{
    size_t  size;

    ngx_memzero(o, sizeof(ngx_http_tent_ap_out_t));

    /* escaping grows text at most 6 times, a link's rel by less */

    size = in < max / 8 ? in * 8 + 256 : max;
    size = ngx_min(size, max);

    o->buf = ngx_pnalloc(pool, size + 1);
    if (o->buf == NULL) {
        return NGX_ERROR;
    }

    o->cap = size;
    o->text = text;

    return NGX_OK;
}


/* all of it or none of it; once something did not fit, nothing more */

static ngx_uint_t
ngx_http_tent_ap_put(ngx_http_tent_ap_out_t *o, const u_char *p, size_t n)
{
    if (o->full || o->len + n + o->closing > o->cap) {
        o->full = 1;
        return 0;
    }

    o->len = ngx_cpymem(o->buf + o->len, p, n) - o->buf;

    return 1;
}


static void
ngx_http_tent_ap_put_cp(ngx_http_tent_ap_out_t *o, uint32_t cp)
{
    size_t       n;
    u_char       buf[8];
    const char  *esc;

    /* controls are dropped, but for tab and newline */

    if ((cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp < 0xa0))
    {
        return;
    }

    if (o->text) {
        if ((cp == '\n' || cp == '\t') && !o->pre) {
            cp = ' ';
        }

        n = ngx_http_tent_ap_utf8(cp, buf);
        (void) ngx_http_tent_ap_put(o, buf, n);
        return;
    }

    switch (cp) {
    case '<':  esc = "&lt;"; break;
    case '>':  esc = "&gt;"; break;
    case '&':  esc = "&amp;"; break;
    case '"':  esc = "&quot;"; break;
    case '\'': esc = "&#39;"; break;
    default:   esc = NULL;
    }

    if (esc) {
        (void) ngx_http_tent_ap_put(o, (u_char *) esc, ngx_strlen(esc));
        return;
    }

    n = ngx_http_tent_ap_utf8(cp, buf);
    (void) ngx_http_tent_ap_put(o, buf, n);
}


/* text: at least n line breaks end the output, unless it is empty */

static void
ngx_http_tent_ap_break(ngx_http_tent_ap_out_t *o, ngx_uint_t n)
{
    ngx_uint_t  have;

    while (o->len && o->buf[o->len - 1] == ' ') {
        o->len--;
    }

    if (o->len == 0) {
        return;
    }

    /* only the last n are looked at: a run of <br> is not read again */

    for (have = 0;
         have < n && have < o->len && o->buf[o->len - 1 - have] == '\n';
         have++)
    {
        /* void */
    }

    while (have++ < n) {
        (void) ngx_http_tent_ap_put(o, (u_char *) "\n", 1);
    }
}


/*
 * At '<': a comment, a declaration, an end tag, a start tag, or a plain
 * '<'.  Returns where reading goes on; an unclosed construct takes the
 * rest of the input with it, as it would in a browser.
 */

static u_char *
ngx_http_tent_ap_tag(ngx_pool_t *pool, ngx_http_tent_ap_out_t *o, u_char *p,
    u_char *last)
{
    u_char                   *q;
    size_t                    n;
    ngx_str_t                 name, href, class;
    ngx_uint_t                i, end, closed;
    const char              **d;

    if (last - p >= 4 && ngx_strncmp(p, "<!--", 4) == 0) {
        return ngx_http_tent_ap_skip_to(p + 4, last, "-->");
    }

    if (last - p >= 9 && ngx_strncasecmp(p, (u_char *) "<![CDATA[", 9) == 0) {
        return ngx_http_tent_ap_skip_to(p + 9, last, "]]>");
    }

    if (last - p >= 2 && (p[1] == '!' || p[1] == '?')) {
        return ngx_http_tent_ap_skip_to(p + 2, last, ">");
    }

    end = (last - p >= 2 && p[1] == '/');
    q = p + 1 + end;

    if (q == last || !ngx_http_tent_ap_alpha(*q)) {

        if (end) {
            /* "</>" is nothing, "</ x>" a bogus comment */
            return ngx_http_tent_ap_skip_to(q, last, ">");
        }

        ngx_http_tent_ap_put_cp(o, '<');
        return p + 1;
    }

    name.data = q;

    while (q < last && !ngx_http_tent_ap_blank(*q) && *q != '/' && *q != '>')
    {
        q++;
    }

    name.len = q - name.data;

    ngx_str_null(&href);
    ngx_str_null(&class);

    q = ngx_http_tent_ap_attrs(q, last, &href, &class, &closed);

    if (!closed) {
        return last;
    }

    if (end) {
        for (i = 0; ngx_http_tent_ap_tags[i].name; i++) {
            n = ngx_http_tent_ap_tags[i].len;

            if (name.len == n
                && ngx_strncasecmp(name.data,
                                   (u_char *) ngx_http_tent_ap_tags[i].name,
                                   n) == 0)
            {
                ngx_http_tent_ap_close(o, i);
                break;
            }
        }

        return q;
    }

    for (d = ngx_http_tent_ap_drop; *d; d++) {
        n = ngx_strlen(*d);

        if (name.len == n
            && ngx_strncasecmp(name.data, (u_char *) *d, n) == 0)
        {
            return ngx_http_tent_ap_skip_element(q, last, &name);
        }
    }

    if (name.len == 9
        && ngx_strncasecmp(name.data, (u_char *) "plaintext", 9) == 0)
    {
        /* all that follows is text to a browser: we take none of it */
        return last;
    }

    for (i = 0; ngx_http_tent_ap_tags[i].name; i++) {
        n = ngx_http_tent_ap_tags[i].len;

        if (name.len == n
            && ngx_strncasecmp(name.data,
                               (u_char *) ngx_http_tent_ap_tags[i].name, n)
               == 0)
        {
            ngx_http_tent_ap_open(pool, o, i, &href, &class);
            break;
        }
    }

    if (o->error) {
        return NULL;
    }

    return q;
}


static u_char *
ngx_http_tent_ap_skip_to(u_char *p, u_char *last, const char *end)
{
    size_t   n;
    u_char  *q;

    n = ngx_strlen(end);

    for (q = p; (size_t) (last - q) >= n; q++) {
        if (ngx_strncmp(q, end, n) == 0) {
            return q + n;
        }
    }

    return last;
}


/*
 * A tag's attributes, up to its '>': the first "href" and "class" are
 * noted, every other one is read past.  *closed is 0 when the input
 * ends first (an unclosed quote or tag).
 */

static u_char *
ngx_http_tent_ap_attrs(u_char *p, u_char *last, ngx_str_t *href,
    ngx_str_t *class, ngx_uint_t *closed)
{
    u_char     *start, quote;
    ngx_str_t   attr, value;

    *closed = 0;

    for ( ;; ) {

        while (p < last && (ngx_http_tent_ap_blank(*p) || *p == '/')) {
            p++;
        }

        if (p == last) {
            return last;
        }

        if (*p == '>') {
            *closed = 1;
            return p + 1;
        }

        /* a name: '=' is part of it only as its first character */

        start = p++;

        while (p < last && !ngx_http_tent_ap_blank(*p) && *p != '/'
               && *p != '>' && *p != '=')
        {
            p++;
        }

        attr.data = start;
        attr.len = p - start;
        ngx_str_null(&value);

        while (p < last && ngx_http_tent_ap_blank(*p)) {
            p++;
        }

        if (p < last && *p == '=') {
            p++;

            while (p < last && ngx_http_tent_ap_blank(*p)) {
                p++;
            }

            if (p < last && (*p == '"' || *p == '\'')) {
                quote = *p++;
                start = p;

                while (p < last && *p != quote) {
                    p++;
                }

                if (p == last) {
                    return last;
                }

                value.data = start;
                value.len = p++ - start;

            } else {
                start = p;

                while (p < last && !ngx_http_tent_ap_blank(*p) && *p != '>') {
                    p++;
                }

                value.data = start;
                value.len = p - start;
            }
        }

        if (attr.len == 4 && ngx_strncasecmp(attr.data, (u_char *) "href", 4)
                             == 0 && href->data == NULL)
        {
            *href = value;
            href->data = value.data ? value.data : (u_char *) "";

        } else if (attr.len == 5
                   && ngx_strncasecmp(attr.data, (u_char *) "class", 5) == 0
                   && class->data == NULL)
        {
            *class = value;
            class->data = value.data ? value.data : (u_char *) "";
        }
    }
}


/* past the end tag of a dropped element, or to the end of the input */

static u_char *
ngx_http_tent_ap_skip_element(u_char *p, u_char *last, ngx_str_t *name)
{
    u_char      *q;
    ngx_str_t    href, class;
    ngx_uint_t   closed;

    for (q = p; (size_t) (last - q) >= name->len + 2; q++) {

        if (q[0] != '<' || q[1] != '/'
            || ngx_strncasecmp(q + 2, name->data, name->len) != 0)
        {
            continue;
        }

        q += 2 + name->len;

        if (q < last && !ngx_http_tent_ap_blank(*q) && *q != '/' && *q != '>')
        {
            continue;
        }

        ngx_str_null(&href);
        ngx_str_null(&class);

        return ngx_http_tent_ap_attrs(q, last, &href, &class, &closed);
    }

    return last;
}


static void
ngx_http_tent_ap_open(ngx_pool_t *pool, ngx_http_tent_ap_out_t *o,
    ngx_uint_t tag, ngx_str_t *href, ngx_str_t *class)
{
    u_char                  *s, *last;
    size_t                   len, n, start;
    uint32_t                 cp;
    ngx_str_t                url, token;
    ngx_uint_t               i, silent, kept;
    const char             **c;
    ngx_http_tent_ap_tag_t  *t;

    t = &ngx_http_tent_ap_tags[tag];

    if (tag == NGX_HTTP_TENT_AP_TAG_BR) {
        (void) ngx_http_tent_ap_put(o, (u_char *) (o->text ? "\n" : "<br>"),
                                    o->text ? 1 : 4);
        return;
    }

    if (o->depth == NGX_HTTP_TENT_AP_HTML_DEPTH) {
        /* deeper than that: the tag is dropped, its text kept */
        return;
    }

    silent = o->text;

    if (tag == NGX_HTTP_TENT_AP_TAG_A && !silent) {

        /* a link in a link is no link */

        for (i = 0; i < o->depth; i++) {
            if ((o->stack[i] & ~NGX_HTTP_TENT_AP_SILENT)
                == NGX_HTTP_TENT_AP_TAG_A)
            {
                silent = 1;
            }
        }

        if (href == NULL || href->data == NULL) {
            silent = 1;
        }

        if (!silent) {
            switch (ngx_http_tent_ap_href(pool, o, href, &url)) {

            case NGX_OK:
                break;

            case NGX_DECLINED:
                silent = 1;
                break;

            default:
                o->error = 1;
                return;
            }
        }
    }

    if (o->text && t->block) {
        ngx_http_tent_ap_break(o, t->block);
    }

    if (!silent) {

        /* the room for "</name>" is held back before "<name" is written */

        n = sizeof("</>") - 1 + t->len;
        start = o->len;
        o->closing += n;

        (void) ngx_http_tent_ap_put(o, (u_char *) "<", 1);
        (void) ngx_http_tent_ap_put(o, (u_char *) t->name, t->len);

        if (tag == NGX_HTTP_TENT_AP_TAG_A) {
            (void) ngx_http_tent_ap_put(o, (u_char *) " href=\"", 7);

            s = url.data;
            last = url.data + url.len;

            while (s < last) {
                s = ngx_http_tent_ap_char(s, last, &cp);
                ngx_http_tent_ap_put_cp(o, cp);
            }

            (void) ngx_http_tent_ap_put(o, (u_char *) "\"", 1);
            (void) ngx_http_tent_ap_put(o, (u_char *) NGX_HTTP_TENT_AP_REL,
                                        sizeof(NGX_HTTP_TENT_AP_REL) - 1);
        }

        if (tag == NGX_HTTP_TENT_AP_TAG_SPAN && class && class->data) {

            /* the allowed classes only, each once, in our spelling */

            kept = 0;
            last = class->data + class->len;

            for (c = ngx_http_tent_ap_classes; *c; c++) {
                len = ngx_strlen(*c);

                for (s = class->data; s < last; /* void */) {

                    while (s < last && ngx_http_tent_ap_blank(*s)) {
                        s++;
                    }

                    token.data = s;

                    while (s < last && !ngx_http_tent_ap_blank(*s)) {
                        s++;
                    }

                    token.len = s - token.data;

                    if (token.len == len
                        && ngx_strncmp(token.data, *c, len) == 0)
                    {
                        if (kept) {
                            (void) ngx_http_tent_ap_put(o, (u_char *) " ", 1);

                        } else {
                            (void) ngx_http_tent_ap_put(o,
                                                     (u_char *) " class=\"", 8);
                        }

                        (void) ngx_http_tent_ap_put(o, (u_char *) *c, len);
                        kept = 1;
                        break;
                    }
                }
            }

            if (kept) {
                (void) ngx_http_tent_ap_put(o, (u_char *) "\"", 1);
            }
        }

        (void) ngx_http_tent_ap_put(o, (u_char *) ">", 1);

        if (o->full) {
            /* cut inside the tag: taken back, it was never open */
            o->len = start;
            o->closing -= n;
            return;
        }
    }

    if (o->full) {
        return;
    }

    o->stack[o->depth++] = (u_char) (tag | (silent ? NGX_HTTP_TENT_AP_SILENT
                                                   : 0));

    if (tag == NGX_HTTP_TENT_AP_TAG_PRE) {
        o->pre++;
    }
}


/* the innermost open tag of this kind, and all inside it, are closed */

static void
ngx_http_tent_ap_close(ngx_http_tent_ap_out_t *o, ngx_uint_t tag)
{
    ngx_uint_t  i;

    for (i = o->depth; i > 0; i--) {
        if ((o->stack[i - 1] & ~NGX_HTTP_TENT_AP_SILENT) == tag) {
            break;
        }
    }

    if (i == 0) {
        return;
    }

    while (o->depth >= i) {
        ngx_http_tent_ap_pop(o);
    }
}


static void
ngx_http_tent_ap_pop(ngx_http_tent_ap_out_t *o)
{
    u_char                  *p, buf[16];
    ngx_uint_t               tag;
    ngx_http_tent_ap_tag_t  *t;

    o->depth--;
    tag = o->stack[o->depth] & ~NGX_HTTP_TENT_AP_SILENT;
    t = &ngx_http_tent_ap_tags[tag];

    if (tag == NGX_HTTP_TENT_AP_TAG_PRE) {
        o->pre--;
    }

    if (o->stack[o->depth] & NGX_HTTP_TENT_AP_SILENT) {

        if (o->text && t->block) {
            ngx_http_tent_ap_break(o, t->block);
        }

        return;
    }

    /* the room was held back when it was opened: it always fits */

    p = ngx_cpymem(buf, "</", 2);
    p = ngx_cpymem(p, t->name, t->len);
    *p++ = '>';

    o->closing -= p - buf;
    o->len = ngx_cpymem(o->buf + o->len, buf, p - buf) - o->buf;
}


/*
 * An href kept only as an absolute http(s) or mailto URL, read as a
 * browser reads it: references decoded, then blanks and controls
 * dropped wherever they are ("jav&#x09;ascript:" is "javascript:").
 * What is written is this very string, escaped again.
 */

static ngx_int_t
ngx_http_tent_ap_href(ngx_pool_t *pool, ngx_http_tent_ap_out_t *o,
    ngx_str_t *value, ngx_str_t *url)
{
    u_char    *p, *last, *d;
    size_t     n;
    uint32_t   cp;

    if (value->len > NGX_HTTP_TENT_AP_HREF_MAX * 8) {
        return NGX_DECLINED;
    }

    d = ngx_pnalloc(pool, value->len * 4 + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    url->data = d;
    p = value->data;
    last = value->data + value->len;

    while (p < last) {
        if (*p == '&' && !o->plain) {
            p = ngx_http_tent_ap_ref(p, last, &cp);

        } else {
            p = ngx_http_tent_ap_char(p, last, &cp);
        }

        if (cp <= 0x20 || (cp >= 0x7f && cp < 0xa0)) {
            continue;
        }

        n = ngx_http_tent_ap_utf8(cp, d);
        d += n;
    }

    url->len = d - url->data;

    if (url->len > NGX_HTTP_TENT_AP_HREF_MAX) {
        return NGX_DECLINED;
    }

    if ((url->len > 7
         && ngx_strncasecmp(url->data, (u_char *) "http://", 7) == 0)
        || (url->len > 8
            && ngx_strncasecmp(url->data, (u_char *) "https://", 8) == 0)
        || (url->len > 7
            && ngx_strncasecmp(url->data, (u_char *) "mailto:", 7) == 0))
    {
        /* the scheme in our spelling */

        for (d = url->data; *d != ':'; d++) {
            *d = ngx_tolower(*d);
        }

        return NGX_OK;
    }

    return NGX_DECLINED;
}
