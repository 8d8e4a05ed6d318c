
/*
 * Standalone check of src/activitypub/ngx_http_tent_ap_map.c,
 * ap_map_in.c and ap_html.c: the HTML allow-list (exact outputs, the
 * OWASP filter evasion classics, bounds), our posts as ActivityStreams
 * objects and activities, the fediverse's objects as Tent posts (what
 * comes out passes ngx_http_tent_post_validate(), compiled in with
 * post_types.c), and the refusals.  Stubs for the nginx functions the
 * files use (the pool is malloc, freed at the end).  t/unit/run.sh
 * builds and runs it.
 */


#include "../../src/keys/ngx_http_tent_keys.c"
#include "../../src/posts/ngx_http_tent_post_types.c"
#include "../../src/posts/ngx_http_tent_post_envelope.c"
#include "../../src/activitypub/ngx_http_tent_ap_html.c"
#include "../../src/activitypub/ngx_http_tent_ap_map.c"
#include "../../src/activitypub/ngx_http_tent_ap_announce.c"
#include "../../src/activitypub/ngx_http_tent_ap_map_in.c"
#include "../../src/activitypub/ngx_http_tent_ap_util.c"

#include <openssl/evp.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>


static int  failures;
static int  checks;

static uint32_t   crc32_nibbles[16];
uint32_t         *ngx_crc32_table_short = crc32_nibbles;

static void     **allocs;
static size_t     nallocs, maxallocs;

static ngx_log_t   test_log;
static ngx_pool_t  test_pool = { .log = &test_log };
static ngx_pool_t *pool = &test_pool;


void *
ngx_pnalloc(ngx_pool_t *p, size_t size)
{
    void  *m;

    if (nallocs == maxallocs) {
        maxallocs = maxallocs ? maxallocs * 2 : 1024;
        allocs = realloc(allocs, maxallocs * sizeof(void *));
    }

    m = malloc(size ? size : 1);
    allocs[nallocs++] = m;

    return m;
}


static void
pool_reset(void)
{
    while (nallocs) {
        free(allocs[--nallocs]);
    }
}


ngx_int_t
ngx_strncasecmp(u_char *s1, u_char *s2, size_t n)
{
    return strncasecmp((char *) s1, (char *) s2, n);
}


u_char *
ngx_strlcasestrn(u_char *s1, u_char *last, u_char *s2, size_t n)
{
    n++;

    for ( /* void */ ; s1 + n <= last; s1++) {
        if (strncasecmp((char *) s1, (char *) s2, n) == 0) {
            return s1;
        }
    }

    return NULL;
}


/* NGX_ESCAPE_URI_COMPONENT: all but unreserved characters */

uintptr_t
ngx_escape_uri(u_char *dst, u_char *src, size_t size, ngx_uint_t type)
{
    size_t      n;
    uintptr_t   count;
    static u_char  hex[] = "0123456789ABCDEF";

    count = 0;

    for (n = 0; n < size; n++) {
        u_char  c = src[n];
        int     keep = isalnum(c) || c == '-' || c == '.' || c == '_'
                       || c == '~';

        if (dst == NULL) {
            count += !keep;
            continue;
        }

        if (keep) {
            *dst++ = c;

        } else {
            *dst++ = '%';
            *dst++ = hex[c >> 4];
            *dst++ = hex[c & 0xf];
        }
    }

    return dst ? (uintptr_t) dst : count;
}


void
ngx_encode_base64url(ngx_str_t *dst, ngx_str_t *src)
{
    size_t  i, n;

    n = EVP_EncodeBlock(dst->data, src->data, src->len);

    for (i = 0; i < n; i++) {
        if (dst->data[i] == '+') {
            dst->data[i] = '-';

        } else if (dst->data[i] == '/') {
            dst->data[i] = '_';
        }
    }

    while (n && dst->data[n - 1] == '=') {
        n--;
    }

    dst->len = n;
}


void
ngx_gmtime(time_t t, ngx_tm_t *tp)
{
    gmtime_r(&t, tp);
    tp->tm_year += 1900;
    tp->tm_mon += 1;
}


void
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
}


static json_t *
parse(const char *text)
{
    json_t        *json;
    json_error_t   err;

    json = json_loads(text, JSON_DECODE_ANY, &err);
    if (json == NULL) {
        fprintf(stderr, "bad test JSON: %s: %s\n", text, err.text);
        exit(2);
    }

    return json;
}


static void
ok(int line, int cond, const char *what)
{
    checks++;

    if (!cond) {
        fprintf(stderr, "ap_map_test.c:%d: %s\n", line, what);
        failures++;
    }
}


/* our output's tags: only the allow-list, balanced, nothing dangerous */

static const char  *bad_words[] = {
    "<script", "<img", "<svg", "<iframe", "<style", "<object", "<embed",
    "javascript:", "vbscript:", "data:", "onerror", "onload", "onclick",
    "style=", "<!--", "<![", "<math", "<form", "<base", "<meta", "<link",
    NULL
};

static void
safe(int line, const char *raw, size_t len)
{
    char         *copy, *out, *p, *q, stack[64][16], name[16];
    size_t        n;
    int           depth, end, i;
    const char  **w;

    copy = strndup(raw, len);
    out = strndup(raw, len);

    for (p = copy; *p; p++) {
        *p = tolower((u_char) *p);
    }

    for (w = bad_words; *w; w++) {
        if (strstr(copy, *w)) {
            fprintf(stderr, "ap_map_test.c:%d: \"%s\" in %s\n", line, *w,
                    out);
            failures++;
        }
    }

    depth = 0;

    for (p = copy; (p = strchr(p, '<')) != NULL; p = q) {
        end = (p[1] == '/');
        q = p + 1 + end;
        n = strcspn(q, " >");

        if (n == 0 || n >= sizeof(name) || strchr(q, '>') == NULL) {
            fprintf(stderr, "ap_map_test.c:%d: bad tag in %s\n", line, out);
            failures++;
            break;
        }

        memcpy(name, q, n);
        name[n] = '\0';
        q = strchr(q, '>') + 1;

        if (strcmp(name, "br") == 0) {
            continue;
        }

        if (!end) {
            strcpy(stack[depth++], name);
            continue;
        }

        if (depth == 0 || strcmp(stack[depth - 1], name) != 0) {
            fprintf(stderr, "ap_map_test.c:%d: unbalanced </%s> in %s\n",
                    line, name, out);
            failures++;
            break;
        }

        depth--;
    }

    if (depth) {
        fprintf(stderr, "ap_map_test.c:%d: %d unclosed in %s\n", line, depth,
                out);
        failures++;
    }

    for (i = 0; i < (int) len; i++) {
        if (((u_char) out[i] < 0x20 && out[i] != '\n' && out[i] != '\t')) {
            fprintf(stderr, "ap_map_test.c:%d: control byte in output\n",
                    line);
            failures++;
            break;
        }
    }

    free(copy);
    free(out);

    /* valid UTF-8: jansson takes it */
    checks++;
    if (len) {
        json_t  *j = json_stringn(raw, len);

        if (j == NULL) {
            fprintf(stderr, "ap_map_test.c:%d: not UTF-8: %.*s\n", line,
                    (int) len, raw);
            failures++;
        }

        json_decref(j);
    }
}


/* the sanitizer: exact output (want NULL: only safe) */

static void
html(int line, const char *in, size_t max, const char *want)
{
    ngx_str_t  i, o;

    checks++;
    i.data = (u_char *) in;
    i.len = strlen(in);

    if (ngx_http_tent_ap_html(pool, &i, max, &o) != NGX_OK) {
        fprintf(stderr, "ap_map_test.c:%d: error\n", line);
        failures++;
        return;
    }

    if (o.len > max) {
        fprintf(stderr, "ap_map_test.c:%d: %zu bytes over %zu\n", line,
                o.len, max);
        failures++;
    }

    if (want && (o.len != strlen(want) || memcmp(o.data, want, o.len) != 0))
    {
        fprintf(stderr, "ap_map_test.c:%d: html(%s)\n   got  %.*s\n"
                "   want %s\n", line, in, (int) o.len, o.data, want);
        failures++;
    }

    safe(line, (char *) o.data, o.len);
    pool_reset();
}


static void
text(int line, const char *in, const char *want)
{
    ngx_str_t  i, o;

    checks++;
    i.data = (u_char *) in;
    i.len = strlen(in);

    if (ngx_http_tent_ap_text(pool, &i, 65536, &o) != NGX_OK
        || o.len != strlen(want) || memcmp(o.data, want, o.len) != 0)
    {
        fprintf(stderr, "ap_map_test.c:%d: text(%s)\n   got  %.*s\n"
                "   want %s\n", line, in, (int) o.len, o.data, want);
        failures++;
    }

    pool_reset();
}


static void
text_html(int line, const char *in, const char *want)
{
    ngx_str_t  i, o;

    checks++;
    i.data = (u_char *) in;
    i.len = strlen(in);

    if (ngx_http_tent_ap_text_html(pool, &i, 65536, &o) != NGX_OK
        || o.len != strlen(want) || memcmp(o.data, want, o.len) != 0)
    {
        fprintf(stderr, "ap_map_test.c:%d: text_html(%s)\n   got  %.*s\n"
                "   want %s\n", line, in, (int) o.len, o.data, want);
        failures++;
    }

    pool_reset();
}


#define H(in, want)  html(__LINE__, in, 65536, want)
#define X(in)        html(__LINE__, in, 65536, NULL)
#define TX(in, want) text(__LINE__, in, want)
#define TH(in, want) text_html(__LINE__, in, want)


static void
test_html(void)
{
    char    *big, *p;
    size_t   n;
    int      i;

    /* the allow-list kept, in our spelling */

    H("<p>Hello <b>world</b></p>", "<p>Hello <b>world</b></p>");
    H("<P CLASS=x>a<BR/>b</P>", "<p>a<br>b</p>");
    H("<strong>s</strong><em>e</em><i>i</i><code>c</code>",
      "<strong>s</strong><em>e</em><i>i</i><code>c</code>");
    H("<ul><li>1</li><li>2</ul>", "<ul><li>1</li><li>2</li></ul>");
    H("<ol><li>x</ol><blockquote>q</blockquote><pre>a\nb</pre>",
      "<ol><li>x</li></ol><blockquote>q</blockquote><pre>a\nb</pre>");
    H("<a href=\"https://e.example/x?a=1&amp;b=2\" class=\"u-url mention\" "
      "target=_blank>@bob</a>",
      "<a href=\"https://e.example/x?a=1&amp;b=2\" rel=\"nofollow noopener "
      "noreferrer\">@bob</a>");
    H("<a href='HTTP://e.example'>x</a>",
      "<a href=\"http://e.example\" rel=\"nofollow noopener noreferrer\">x"
      "</a>");
    H("<a href=mailto:bob@e.example>m</a>",
      "<a href=\"mailto:bob@e.example\" rel=\"nofollow noopener noreferrer\""
      ">m</a>");
    H("<span class=\"h-card\"><a href=\"https://m.example/@bob\" "
      "class=\"u-url mention\">@<span>bob</span></a></span>",
      "<span class=\"h-card\"><a href=\"https://m.example/@bob\" "
      "rel=\"nofollow noopener noreferrer\">@<span>bob</span></a></span>");
    H("<span class=\"invisible evil mention\">x</span>",
      "<span class=\"mention\">x</span>");
    H("<span class=\"u-url h-card\">x</span>",
      "<span class=\"h-card u-url\">x</span>");
    H("<span style=\"color:red\" onclick=\"x()\">x</span>", "<span>x</span>");

    /* text: decoded and escaped again */

    H("a &lt; b &amp;&amp; c &gt; d &quot;q&quot; &#39;s&#39;",
      "a &lt; b &amp;&amp; c &gt; d &quot;q&quot; &#39;s&#39;");
    H("5 < 6 > 4 & \"x\" 'y'",
      "5 &lt; 6 &gt; 4 &amp; &quot;x&quot; &#39;y&#39;");
    H("&#60;script&#62;", "&lt;script&gt;");
    H("&#x3c;b&#x3E;", "&lt;b&gt;");
    H("&unknown; &amp", "&amp;unknown; &amp;amp");
    H("&#0; &#xD800; &#x110000; &#99999999999;",
      "\xef\xbf\xbd \xef\xbf\xbd \xef\xbf\xbd \xef\xbf\xbd");
    H("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    H("bad \xff\xc0\x80 \xed\xa0\x80 end",
      "bad \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
    H("ctl\x01\x1b\x7f ok", "ctl ok");
    H("&#1;&#x1b;&#127;&#x85;x", "x");

    /* dropped whole: script, style, iframe, object and their content */

    H("a<script>alert(1)</script>b", "ab");
    H("a<SCRIPT SRC=//x.example/x.js></SCRIPT>b", "ab");
    H("a<script>document.write('</scr'+'ipt>')</script>b", "ab");
    H("a<style>body{}</style >b", "ab");
    H("a<iframe src=x>in</iframe>b<object data=x>o</object>c", "abc");
    H("a<svg/onload=alert(1)>b", "a");
    H("a<svg><script>x</script></svg>b", "ab");
    H("a<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>b", "ab");
    H("a<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">"
      "</noscript>b", "a&quot;&gt;b");
    H("a<textarea><script>x</script></textarea>b", "ab");
    H("a<plaintext><b>x", "a");
    H("<script>never closed", "");

    /* unknown tags dropped, their text kept */

    H("<img src=x onerror=alert(1)>x", "x");
    H("<IMG SRC=\"javascript:alert('XSS');\">x", "x");
    H("<img src=x:alert(alt) onerror=eval(src) alt=0>", "");
    H("<body onload=alert(1)>x</body>", "x");
    H("<div><form action=x><input name=y></form></div>", "");
    H("<marquee>m</marquee><blink>b</blink>", "mb");
    H("<scr<script>ipt>alert(1)</scr</script>ipt>",
      "ipt&gt;alert(1)ipt&gt;");
    H("<<script>alert(1);//<</script>", "&lt;");
    H("<a onmouseover=alert(1)>x</a>", "x");
    H("<b onmouseover=\"alert(1)\">x</b>", "<b>x</b>");
    H("<p style=\"background:url(javascript:alert(1))\">x</p>", "<p>x</p>");
    H("<meta http-equiv=refresh content=\"0;url=javascript:x\">", "");
    H("<base href=\"javascript:x//\">", "");
    H("<link rel=stylesheet href=\"javascript:x\">", "");

    /* URLs: only absolute http(s) and mailto, however spelled */

    H("<a href=\"javascript:alert(1)\">x</a>", "x");
    H("<a href=\"JaVaScRiPt:alert(1)\">x</a>", "x");
    H("<a href=\"jav&#x09;ascript:alert(1)\">x</a>", "x");
    H("<a href=\"jav&#x0A;ascript:alert(1)\">x</a>", "x");
    H("<a href=\"jav\tascript:alert(1)\">x</a>", "x");
    H("<a href=\" &#14;  javascript:alert(1)\">x</a>", "x");
    H("<a href=\"&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;"
      "&#58;alert(1)\">x</a>", "x");
    H("<a href=\"&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099"
      "&#0000114&#0000105&#0000112&#0000116&#0000058alert(1)\">x</a>", "x");
    H("<a href=\"&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A"
      "alert(1)\">x</a>", "x");
    H("<a href=\"javascript&colon;alert(1)\">x</a>", "x");
    H("<a href=\"vbscript:msgbox(1)\">x</a>", "x");
    H("<a href=\"data:text/html;base64,PHNjcmlwdD4=\">x</a>", "x");
    H("<a href=\"DATA:text/html,<script>x</script>\">x</a>", "x");
    H("<a href=\"/tent/oauth/authorize\">x</a>", "x");
    H("<a href=\"//evil.example\">x</a>", "x");
    H("<a href=\"https:/relative\">x</a>", "x");
    H("<a href=\"https://\">x</a>", "x");
    H("<a href>x</a><a>y</a>", "xy");
    H("<a href=\"h&#x74;tps://e.example/\">x</a>",
      "<a href=\"https://e.example/\" rel=\"nofollow noopener noreferrer\">"
      "x</a>");
    H("<a href=\"https://e.example/\"q\" onclick=\"x\">x</a>",
      "<a href=\"https://e.example/\" rel=\"nofollow noopener noreferrer\">"
      "x</a>");
    H("<a href=\"https://e.example/&quot;a=&quot;x\">x</a>",
      "<a href=\"https://e.example/&quot;a=&quot;x\" rel=\"nofollow "
      "noopener noreferrer\">x</a>");
    H("<a href=\"https://e.example/<b>\">x</a>",
      "<a href=\"https://e.example/&lt;b&gt;\" rel=\"nofollow noopener "
      "noreferrer\">x</a>");
    H("<a href=\"https://a.example\"><a href=\"https://b.example\">x</a>y"
      "</a>",
      "<a href=\"https://a.example\" rel=\"nofollow noopener noreferrer\">"
      "xy</a>");

    /* comments, CDATA, declarations, processing instructions */

    H("a<!-- <script>alert(1)</script> -->b", "ab");
    H("a<!--<img src=x onerror=alert(1)>-->b<!-- unclosed <b>x", "ab");
    H("a<![CDATA[<script>alert(1)</script>]]>b", "ab");
    H("a<!DOCTYPE html>b<?xml version=1?>c", "abc");
    H("a<!--[if IE]><script>x</script><![endif]-->b", "ab");
    H("a</ b>c</>d", "acd");

    /* unclosed and malformed tags */

    H("a<b", "a");
    H("a<b title=\"x>y", "a");
    H("a<a href=\"https://e.example", "a");
    H("x <3 y", "x &lt;3 y");
    H("x < y", "x &lt; y");
    H("<b><i>x</b>y</i>", "<b><i>x</i></b>y");
    H("</p></b>x</li>", "x");
    H("<p><p><p>", "<p><p><p></p></p></p>");

    /* deep nesting: tags past 32 are dropped, the output balanced */

    big = malloc(64 * 8 + 1);
    for (p = big, i = 0; i < 64; i++) {
        p = stpcpy(p, "<b>");
    }
    *p = '\0';
    X(big);
    free(big);

    /* bounds: a cut output stays balanced and UTF-8 */

    for (n = 0; n < 90; n++) {
        html(__LINE__, "<p><b><a href=\"https://e.example/\">caf\xc3\xa9"
             " &amp; \xf0\x9f\x98\x80 x</a></b></p><ul><li>y</li></ul>", n,
             NULL);
    }

    html(__LINE__, "<p>abcdef</p>", 10, "<p>abc</p>");
    html(__LINE__, "<p>abcdef</p>", 6, "");
    html(__LINE__, "\xe2\x82\xac\xe2\x82\xac", 4, "\xe2\x82\xac");
    html(__LINE__, "&&&", 6, "&amp;");

    /* over-long input: bounded output, no time blow-up */

    n = 1024 * 1024;
    big = malloc(n + 1);
    for (i = 0; i < (int) n; i++) {
        big[i] = "<b&a\"'>x"[i % 8];
    }
    big[n] = '\0';
    html(__LINE__, big, 65536, NULL);

    memset(big, '<', n);
    html(__LINE__, big, 65536, NULL);
    for (i = 0; i < (int) n; i += 4) {
        memcpy(big + i, "<!--", 4);
    }
    html(__LINE__, big, 65536, "");

    /* text: a run of line breaks, then paragraphs, read once each */

    for (i = 0; i + 8 <= (int) n; i += 8) {
        memcpy(big + i, i < (int) n / 2 ? "<br><br>" : "<p></p> ", 8);
    }
    big[i] = '\0';
    {
        ngx_str_t  in, out;

        in.data = (u_char *) big;
        in.len = strlen(big);
        ok(__LINE__, ngx_http_tent_ap_text(pool, &in, 2 * n, &out) == NGX_OK
                     && out.len == 0, "breaks alone are nothing");
        pool_reset();
    }
    free(big);

    /* text: what a status keeps */

    TX("<p>Hello <b>world</b></p><p>second</p>", "Hello world\n\nsecond");
    TX("a<br>b<br/>c", "a\nb\nc");
    TX("<p><span class=\"h-card\"><a href=\"https://m.example/@bob\">@<span>"
       "bob</span></a></span> hi</p>", "@bob hi");
    TX("<a href=\"https://e.example/x\"><span class=\"invisible\">https://"
       "</span><span class=\"ellipsis\">e.example/x</span></a>",
       "https://e.example/x");
    TX("1 &lt; 2 &amp; 3 &gt; 2", "1 < 2 & 3 > 2");
    TX("<ul><li>a</li><li>b</li></ul>after", "a\nb\n\nafter");
    TX("a<script>x</script>b<style>y</style>c", "abc");
    TX("line\nwrap", "line wrap");
    TX("<pre>keep\nthis</pre>", "keep\nthis");
    TX("<p></p><p>x</p><p></p>", "x");

    /* our text as HTML */

    TH("Hello", "<p>Hello</p>");
    TH("a < b & \"c\"", "<p>a &lt; b &amp; &quot;c&quot;</p>");
    TH("one\ntwo", "<p>one<br>two</p>");
    TH("see https://e.example/a?b=1&c=2.",
       "<p>see <a href=\"https://e.example/a?b=1&amp;c=2\" rel=\"nofollow "
       "noopener noreferrer\">https://e.example/a?b=1&amp;c=2</a>.</p>");
    TH("(http://e.example/x)",
       "<p>(<a href=\"http://e.example/x\" rel=\"nofollow noopener "
       "noreferrer\">http://e.example/x</a>)</p>");
    TH("https://e.example/&lt;x",
       "<p><a href=\"https://e.example/&amp;lt;x\" rel=\"nofollow noopener "
       "noreferrer\">https://e.example/&amp;lt;x</a></p>");
    TH("xhttps://e.example http:// https:///x",
       "<p>xhttps://e.example http:// https:///x</p>");
    TH("javascript:alert(1) <script>", "<p>javascript:alert(1) &lt;script&gt;"
       "</p>");
    TH("", "<p></p>");
}


/* ------------------------------------------------------------------ */


static ngx_str_t  origin_api = ngx_string("https://alice.example/tent");
static ngx_str_t  entity = ngx_string("https://alice.example");


static int
same_json(int line, json_t *got, const char *want)
{
    int      equal;
    char    *s;
    json_t  *w;

    checks++;
    w = parse(want);
    equal = got && json_equal(got, w);

    if (!equal) {
        s = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
        fprintf(stderr, "ap_map_test.c:%d:\n   got  %s\n   want %s\n", line,
                s ? s : "NULL", want);
        free(s);
        failures++;
    }

    json_decref(w);

    return equal;
}


static void
object(int line, const char *post, ngx_uint_t kind, const char *want)
{
    json_t  *p, *o;

    p = parse(post);

    o = (kind == 99) ? ngx_http_tent_ap_object(pool, &origin_api, &entity, p)
                     : ngx_http_tent_ap_activity(pool, &origin_api, &entity,
                                                 p, kind);

    if (want == NULL) {
        ok(line, o == NULL, "an object where none was wanted");

    } else {
        (void) same_json(line, o, want);
    }

    json_decref(o);
    json_decref(p);
    pool_reset();
}


#define ST  "\"type\":\"https://tent.io/types/post/status/v0.1.0\","
#define ES  "\"type\":\"https://tent.io/types/post/essay/v0.1.0\","
#define PH  "\"type\":\"https://tent.io/types/post/photo/v0.1.0\","
#define PUB "\"permissions\":{\"public\":true},"
#define OID "https://alice.example/tent/posts/p1"
#define FOL "https://alice.example/tent/activitypub/alice/followers"
#define AS  "https://www.w3.org/ns/activitystreams#Public"

#define O(post, want)  object(__LINE__, post, 99, want)
#define A(post, kind, want)  object(__LINE__, post, kind, want)


static void
test_object(void)
{
    u_char     buf[32];
    ngx_str_t  s, id;

    /* a public status */

    O("{\"id\":\"p1\",\"entity\":\"https://alice.example\"," ST PUB
      "\"published_at\":1796300000,\"version\":1,"
      "\"content\":{\"text\":\"Hi <you> https://e.example/x\\nbye\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"published\":\"2026-12-03T12:13:20Z\","
      "\"content\":\"<p>Hi &lt;you&gt; <a href=\\\"https://e.example/x\\\" "
      "rel=\\\"nofollow noopener noreferrer\\\">https://e.example/x</a>"
      "<br>bye</p>\","
      "\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"],"
      "\"tag\":[],\"attachment\":[]}");

    /* a reply to one of ours and a mention: inReplyTo, tag, cc */

    O("{\"id\":\"p1\"," ST PUB "\"published_at\":0,"
      "\"mentions\":[{\"entity\":\"https://alice.example\",\"post\":\"p0\"},"
      "{\"entity\":\"https://m.example/users/bob\"},"
      "{\"entity\":\"https://m.example/users/bob\",\"post\":\"zz\"}],"
      "\"content\":{\"text\":\"x\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"published\":\"1970-01-01T00:00:00Z\",\"content\":\"<p>x</p>\","
      "\"inReplyTo\":\"https://alice.example/tent/posts/p0\","
      "\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\",\"https://m.example/users/bob\"],"
      "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://m.example/users/bob"
      "\",\"name\":\"@bob@m.example\"}],\"attachment\":[]}");

    /* a reply to a remote object: the id the caller copied in */

    O("{\"id\":\"p1\"," ST PUB
      "\"mentions\":[{\"entity\":\"https://m.example/users/bob\","
      "\"post\":\"h\",\"activitypub\":{\"id\":\"https://m.example/n/1\"}}],"
      "\"content\":{\"text\":\"x\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>x</p>\",\"inReplyTo\":\"https://m.example/n/1\","
      "\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\",\"https://m.example/users/bob\"],"
      "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://m.example/users/bob"
      "\",\"name\":\"@bob@m.example\"}],\"attachment\":[]}");

    /* a reply to a Tent post elsewhere: no inReplyTo */

    O("{\"id\":\"p1\"," ST PUB
      "\"mentions\":[{\"entity\":\"https://carol.example\",\"post\":\"c\"}],"
      "\"content\":{\"text\":\"x\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>x</p>\",\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\",\"https://carol.example\"],"
      "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://carol.example\","
      "\"name\":\"@carol@carol.example\"}],\"attachment\":[]}");

    /* private: to the entities permitted, a mention outside them unnamed */

    O("{\"id\":\"p1\"," ST
      "\"permissions\":{\"public\":false,\"groups\":[{\"id\":\"g\"}],"
      "\"entities\":{\"https://m.example/users/bob\":true,"
      "\"https://alice.example\":true}},"
      "\"mentions\":[{\"entity\":\"https://m.example/users/bob\"},"
      "{\"entity\":\"https://eve.example\"}],"
      "\"content\":{\"text\":\"secret\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>secret</p>\","
      "\"to\":[\"https://m.example/users/bob\"],\"cc\":[],"
      "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://m.example/users/bob"
      "\",\"name\":\"@bob@m.example\"}],\"attachment\":[]}");

    /* an essay: an Article; its body through the allow-list */

    O("{\"id\":\"p1\"," ES PUB "\"version\":2,\"published_at\":1,"
      "\"updated_at\":2,"
      "\"content\":{\"title\":\"T <1>\",\"excerpt\":\"<b>ex</b>\","
      "\"body\":\"<p>B<script>x</script></p>\"}}",
      "{\"id\":\"" OID "\",\"type\":\"Article\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"name\":\"T <1>\",\"summary\":\"<b>ex</b>\",\"content\":\"<p>B</p>\","
      "\"published\":\"1970-01-01T00:00:01Z\","
      "\"updated\":\"1970-01-01T00:00:02Z\","
      "\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"],\"tag\":[],"
      "\"attachment\":[]}");

    /* a photo: a Note with its attachments at their Tent URLs */

    O("{\"id\":\"p1\"," PH PUB "\"content\":{\"caption\":\"cat\"},"
      "\"attachments\":[{\"category\":\"photo\",\"type\":\"image/png\","
      "\"name\":\"c at.png\",\"size\":3},{\"category\":\"x\","
      "\"type\":\"application/pdf\",\"name\":\"d.pdf\",\"size\":1}]}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>cat</p>\",\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"],"
      "\"tag\":[],\"attachment\":["
      "{\"type\":\"Image\",\"mediaType\":\"image/png\",\"name\":\"c at.png\","
      "\"url\":\"" OID "/attachments/c%20at.png\"},"
      "{\"type\":\"Document\",\"mediaType\":\"application/pdf\","
      "\"name\":\"d.pdf\",\"url\":\"" OID "/attachments/d.pdf\"}]}");

    /* no ActivityStreams form */

    O("{\"id\":\"p1\",\"type\":\"https://tent.io/types/post/repost/v0.1.0\","
      PUB "\"content\":{\"entity\":\"https://b.example\",\"id\":\"x\"}}",
      NULL);
    O("{\"id\":\"p1\",\"type\":\"https://tent.io/types/post/follower/v0.1.0\""
      ",\"content\":{}}", NULL);
    O("{\"id\":\"p1\",\"type\":\"https://example.org/types/status/v0.1.0\","
      "\"content\":{}}", NULL);
    O("{\"id\":\"p1\",\"type\":\"https://tent.io/types/post/statusx/v0.1.0\","
      "\"content\":{}}", NULL);
    O("{" ST "\"content\":{}}", NULL);
    O("{\"id\":5," ST "\"content\":{}}", NULL);
    O("{\"id\":\"p1\"," ST "\"content\":\"x\"}", NULL);
    O("[]", NULL);

    /* a status of a view's type, no text */

    O("{\"id\":\"p1\",\"type\":\"https://tent.io/types/post/status/v0.1.0"
      "#reply\",\"content\":{}}",
      "{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p></p>\",\"to\":[],\"cc\":[],\"tag\":[],"
      "\"attachment\":[]}");

    /* activities */

    A("{\"id\":\"p1\"," ST PUB "\"version\":3,\"published_at\":1,"
      "\"content\":{\"text\":\"x\"}}", NGX_HTTP_TENT_AP_CREATE,
      "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
      "\"id\":\"" OID "#create-3\",\"type\":\"Create\","
      "\"actor\":\"https://alice.example\",\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\"],\"published\":\"1970-01-01T00:00:01Z\","
      "\"object\":{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>x</p>\",\"published\":\"1970-01-01T00:00:01Z\","
      "\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"],\"tag\":[],"
      "\"attachment\":[]}}");

    A("{\"id\":\"p1\"," ST PUB "\"version\":2,\"published_at\":1,"
      "\"updated_at\":5,\"content\":{\"text\":\"x\"}}",
      NGX_HTTP_TENT_AP_UPDATE,
      "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
      "\"id\":\"" OID "#update-2\",\"type\":\"Update\","
      "\"actor\":\"https://alice.example\",\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\"],\"published\":\"1970-01-01T00:00:05Z\","
      "\"object\":{\"id\":\"" OID "\",\"type\":\"Note\","
      "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID "\","
      "\"content\":\"<p>x</p>\",\"published\":\"1970-01-01T00:00:01Z\","
      "\"updated\":\"1970-01-01T00:00:05Z\","
      "\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"],\"tag\":[],"
      "\"attachment\":[]}}");

    A("{\"id\":\"d9\",\"type\":\"https://tent.io/types/post/delete/v0.1.0\","
      "\"permissions\":{\"public\":false,\"entities\":"
      "{\"https://m.example/users/bob\":true}},\"content\":{\"id\":\"p1\"}}",
      NGX_HTTP_TENT_AP_DELETE,
      "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
      "\"id\":\"" OID "#delete\",\"type\":\"Delete\","
      "\"actor\":\"https://alice.example\","
      "\"to\":[\"https://m.example/users/bob\"],\"cc\":[],"
      "\"object\":{\"id\":\"" OID "\",\"type\":\"Tombstone\","
      "\"to\":[\"https://m.example/users/bob\"],\"cc\":[]}}");

    A("{\"id\":\"p1\"," ES PUB "\"content\":{\"body\":\"x\"}}",
      NGX_HTTP_TENT_AP_DELETE,
      "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
      "\"id\":\"" OID "#delete\",\"type\":\"Delete\","
      "\"actor\":\"https://alice.example\",\"to\":[\"" AS "\"],"
      "\"cc\":[\"" FOL "\"],\"object\":{\"id\":\"" OID "\","
      "\"type\":\"Tombstone\",\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\"]}}");

    A("{\"id\":\"p1\",\"type\":\"https://tent.io/types/post/repost/v0.1.0\","
      "\"content\":{}}", NGX_HTTP_TENT_AP_CREATE, NULL);
    A("{\"type\":\"https://tent.io/types/post/delete/v0.1.0\","
      "\"content\":{}}", NGX_HTTP_TENT_AP_DELETE, NULL);

    /* one recipient's copy of a private activity */

    {
        json_t     *p, *act, *one;
        ngx_str_t   bob = ngx_string("https://m.example/users/bob");

        p = parse("{\"id\":\"p1\"," ST
                  "\"permissions\":{\"public\":false,\"entities\":"
                  "{\"https://m.example/users/bob\":true,"
                  "\"https://carol.example\":true}},"
                  "\"mentions\":[{\"entity\":\"https://m.example/users/bob\"},"
                  "{\"entity\":\"https://carol.example\"}],"
                  "\"content\":{\"text\":\"x\"}}");
        act = ngx_http_tent_ap_activity(pool, &origin_api, &entity, p,
                                        NGX_HTTP_TENT_AP_CREATE);
        ok(__LINE__, act && json_array_size(json_object_get(act, "to")) == 2,
           "two recipients");
        one = ngx_http_tent_ap_narrow(act, &bob);
        (void) same_json(__LINE__, one,
            "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
            "\"id\":\"" OID "#create-1\",\"type\":\"Create\","
            "\"actor\":\"https://alice.example\","
            "\"to\":[\"https://m.example/users/bob\"],\"cc\":[],"
            "\"object\":{\"id\":\"" OID "\",\"type\":\"Note\","
            "\"attributedTo\":\"https://alice.example\",\"url\":\"" OID
            "\",\"content\":\"<p>x</p>\","
            "\"to\":[\"https://m.example/users/bob\"],\"cc\":[],"
            "\"tag\":[{\"type\":\"Mention\","
            "\"href\":\"https://m.example/users/bob\","
            "\"name\":\"@bob@m.example\"}],\"attachment\":[]}}");
        ok(__LINE__, json_array_size(json_object_get(act, "to")) == 2
                     && json_array_size(json_object_get(
                            json_object_get(act, "object"), "tag")) == 2,
           "the activity itself unchanged");
        json_decref(one);
        json_decref(act);
        json_decref(p);

        p = parse("{\"id\":\"p1\"," ST PUB "\"content\":{\"text\":\"x\"}}");
        act = ngx_http_tent_ap_activity(pool, &origin_api, &entity, p,
                                        NGX_HTTP_TENT_AP_CREATE);
        one = ngx_http_tent_ap_narrow(act, &bob);
        ok(__LINE__, one == act, "a public activity as it is");
        json_decref(one);
        json_decref(act);
        json_decref(p);
        pool_reset();
    }

    /* our reposts: Announce, its object, Undo */

    {
        json_t     *p, *kept, *act;
        ngx_str_t   obj, name = ngx_string("alice");

#define RP "\"type\":\"https://tent.io/types/post/repost/v0.1.0\","

        p = parse("{\"id\":\"r1\"," RP PUB "\"published_at\":0,"
                  "\"mentions\":[{\"entity\":\"https://m.example/users/bob\","
                  "\"post\":\"k\"}],\"content\":{\"entity\":"
                  "\"https://m.example/users/bob\",\"id\":\"k\"}}");
        kept = parse("{\"id\":\"k\"," ST "\"activitypub\":"
                     "{\"id\":\"https://m.example/n/1\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_kind(p)
                     == NGX_HTTP_TENT_AP_REPOST, "a repost");
        ok(__LINE__, ngx_http_tent_ap_repost_object(pool, &origin_api,
                         &entity, p, kept, &obj) == NGX_OK
                     && obj.len == 21
                     && memcmp(obj.data, "https://m.example/n/1", 21) == 0,
           "the kept note's own id");
        act = ngx_http_tent_ap_announce(pool, &origin_api, &entity, &name,
                                        p, &obj);
        (void) same_json(__LINE__, act,
            "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
            "\"id\":\"https://alice.example/tent/posts/r1#announce\","
            "\"type\":\"Announce\",\"actor\":\"https://alice.example\","
            "\"object\":\"https://m.example/n/1\","
            "\"published\":\"1970-01-01T00:00:00Z\","
            "\"to\":[\"" AS "\"],\"cc\":[\"" FOL "\","
            "\"https://m.example/users/bob\"]}");
        json_decref(act);
        json_decref(kept);

        /* an actor's Announce we keep: the original it names */

        kept = parse("{\"id\":\"k\"," RP "\"activitypub\":"
                     "{\"id\":\"https://m.example/a/9\","
                     "\"object\":\"https://z.example/n/2\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_object(pool, &origin_api,
                         &entity, p, kept, &obj) == NGX_OK
                     && obj.len == 21
                     && memcmp(obj.data, "https://z.example/n/2", 21) == 0,
           "a kept repost's original");
        json_decref(kept);

        /* not kept, or no http(s) id: the Tent route here */

        kept = parse("{\"id\":\"k\"," ST "\"activitypub\":"
                     "{\"id\":\"javascript:x\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_object(pool, &origin_api,
                         &entity, p, kept, &obj) == NGX_OK
                     && obj.len == sizeof("https://alice.example/tent/posts/"
                                          "https%3A%2F%2Fm.example%2Fusers%2F"
                                          "bob/k") - 1
                     && memcmp(obj.data, "https://alice.example/tent/posts/"
                               "https%3A%2F%2Fm.example%2Fusers%2Fbob/k",
                               obj.len) == 0,
           "no usable id: the Tent route");
        json_decref(kept);
        json_decref(p);

        /* our own post: our object id, nothing read */

        p = parse("{\"id\":\"r2\"," RP PUB "\"content\":{\"entity\":"
                  "\"https://alice.example\",\"id\":\"p1\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_object(pool, &origin_api,
                         &entity, p, NULL, &obj) == NGX_OK
                     && obj.len == sizeof(OID) - 1
                     && memcmp(obj.data, OID, obj.len) == 0, "ours");
        json_decref(p);

        p = parse("{\"id\":\"r3\"," RP PUB "\"content\":{}}");
        ok(__LINE__, ngx_http_tent_ap_repost_object(pool, &origin_api,
                         &entity, p, NULL, &obj) == NGX_DECLINED,
           "a repost of nothing");
        json_decref(p);

        /* the delete post of a repost: Undo; of a status: none of ours */

        p = parse("{\"id\":\"d1\","
                  "\"type\":\"https://tent.io/types/post/delete/v0.1.0\","
                  "\"permissions\":{\"public\":false,\"entities\":"
                  "{\"https://m.example/users/bob\":true}},"
                  "\"content\":{\"id\":\"r1\",\"type\":"
                  "\"https://tent.io/types/post/repost/v0.1.0\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_kind(p)
                     == NGX_HTTP_TENT_AP_UNREPOST, "the delete of a repost");
        act = ngx_http_tent_ap_undo_announce(pool, &origin_api, &entity,
                                             &name, p);
        (void) same_json(__LINE__, act,
            "{\"@context\":\"https://www.w3.org/ns/activitystreams\","
            "\"id\":\"https://alice.example/tent/posts/r1#undo-announce\","
            "\"type\":\"Undo\",\"actor\":\"https://alice.example\","
            "\"object\":{\"id\":"
            "\"https://alice.example/tent/posts/r1#announce\","
            "\"type\":\"Announce\",\"actor\":\"https://alice.example\"},"
            "\"to\":[\"https://m.example/users/bob\"],\"cc\":[]}");
        json_decref(act);
        json_decref(p);

        p = parse("{\"type\":\"https://tent.io/types/post/delete/v0.1.0\","
                  "\"content\":{\"id\":\"p1\",\"type\":\"https://tent.io/"
                  "types/post/reposted/v0.1.0\"}}");
        ok(__LINE__, ngx_http_tent_ap_repost_kind(p) == 0,
           "the delete of another type");
        json_decref(p);
        pool_reset();
#undef RP
    }

    /* helpers */

    ok(__LINE__, ngx_http_tent_ap_time(0, buf) == NGX_OK
                 && memcmp(buf, "1970-01-01T00:00:00Z", 20) == 0, "epoch");
    ok(__LINE__, ngx_http_tent_ap_time(253402300799LL, buf) == NGX_OK
                 && memcmp(buf, "9999-12-31T23:59:59Z", 20) == 0, "9999");
    ok(__LINE__, ngx_http_tent_ap_time(-1, buf) == NGX_DECLINED, "negative");
    ok(__LINE__, ngx_http_tent_ap_time(253402300800LL, buf) == NGX_DECLINED,
       "10000");

    ngx_str_set(&s, "https://alice.example/tent/posts/abc_-9");
    ok(__LINE__, ngx_http_tent_ap_object_post(&origin_api, &s, &id) == NGX_OK
                 && id.len == 6 && memcmp(id.data, "abc_-9", 6) == 0,
       "our object");
    ngx_str_set(&s, "https://alice.example/tent/posts/a/b");
    ok(__LINE__, ngx_http_tent_ap_object_post(&origin_api, &s, &id)
                 == NGX_DECLINED, "a path");
    ngx_str_set(&s, "https://alice.example/tent/posts/");
    ok(__LINE__, ngx_http_tent_ap_object_post(&origin_api, &s, &id)
                 == NGX_DECLINED, "no id");
    ngx_str_set(&s, "https://bob.example/tent/posts/x");
    ok(__LINE__, ngx_http_tent_ap_object_post(&origin_api, &s, &id)
                 == NGX_DECLINED, "not ours");

    ngx_str_set(&s, "https://m.example/users/bob");
    ok(__LINE__, ngx_http_tent_ap_entity_name(&s, &id) == NGX_OK
                 && id.len == 3 && memcmp(id.data, "bob", 3) == 0, "path");
    ngx_str_set(&s, "https://Alice.example:8443/");
    ok(__LINE__, ngx_http_tent_ap_entity_name(&s, &id) == NGX_OK
                 && id.len == 5 && memcmp(id.data, "Alice", 5) == 0, "host");
    ngx_str_set(&s, "https://m.example/@bob@x");
    ok(__LINE__, ngx_http_tent_ap_entity_name(&s, &id) == NGX_DECLINED,
       "bad name");

    ngx_str_set(&s, "https://m.example/n/1");
    ok(__LINE__, ngx_http_tent_ap_post_id(&s, buf) == NGX_OK
                 && strspn((char *) buf, "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") >= 22,
       "post id");

    pool_reset();
}


/* ------------------------------------------------------------------ */


static ngx_str_t  actor = ngx_string("https://m.example/users/bob");


/* inbound: want NULL: refused with "error" in the message */

static void
inbound(int line, const char *obj, const char *want, const char *error)
{
    json_t      *o, *p, *v;
    const char  *err, *verr;

    o = parse(obj);
    err = NULL;
    p = ngx_http_tent_ap_to_post(pool, o, &actor, &err);

    checks++;

    if (want == NULL) {
        if (p != NULL || err == NULL || strstr(err, error) == NULL) {
            fprintf(stderr, "ap_map_test.c:%d: wanted refused \"%s\", got "
                    "%s\n", line, error, p ? "a post" : err ? err : "NULL");
            failures++;
        }

    } else if (same_json(line, p, want)) {

        /* what is made is a post Tent takes */

        verr = NULL;
        v = ngx_http_tent_post_validate(p, 1, &verr);
        ok(line, v != NULL, verr ? verr : "not valid");
        json_decref(v);
    }

    json_decref(p);
    json_decref(o);
    pool_reset();
}


#define NOTE  "{\"type\":\"Note\",\"id\":\"https://m.example/n/1\","
#define BOB   "\"entity\":\"https://m.example/users/bob\","
#define APID  "\"activitypub\":{\"id\":\"https://m.example/n/1\"}"
#define STT   "\"type\":\"https://tent.io/types/post/status/v0.1.0\","
#define EST   "\"type\":\"https://tent.io/types/post/essay/v0.1.0\","
#define PUBL  "\"permissions\":{\"public\":true},"

#define IN(obj, want)  inbound(__LINE__, obj, want, NULL)
#define NO(obj, error) inbound(__LINE__, obj, NULL, error)


static void
test_inbound(void)
{
    json_int_t  t;
    ngx_str_t   a, b;
    char       *big, *p;
    int         i;

    /* Mastodon's public note with a mention, reply and image */

    IN(NOTE "\"attributedTo\":\"https://m.example/users/bob\","
       "\"url\":\"https://m.example/@bob/1\","
       "\"published\":\"2026-12-02T13:33:20Z\","
       "\"inReplyTo\":\"https://alice.example/tent/posts/p0\","
       "\"to\":[\"" AS "\"],\"cc\":[\"https://m.example/users/bob/followers\","
       "\"https://alice.example\"],"
       "\"content\":\"<p><span class=\\\"h-card\\\"><a href=\\\"https://"
       "alice.example\\\" class=\\\"u-url mention\\\">@<span>alice</span>"
       "</a></span> hi &amp; <script>x</script></p>\","
       "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://alice.example\","
       "\"name\":\"@alice@alice.example\"},{\"type\":\"Hashtag\","
       "\"name\":\"#x\"}],"
       "\"attachment\":[{\"type\":\"Document\",\"mediaType\":\"image/png\","
       "\"url\":\"https://m.example/f/1.png\",\"name\":\"a cat\"},"
       "{\"type\":\"Document\",\"url\":\"javascript:x\"}]}",
       "{" BOB STT PUBL "\"content\":{\"text\":\"@alice hi &\"},"
       "\"published_at\":1796218400,"
       "\"mentions\":[{\"entity\":\"https://alice.example/tent/posts/p0\","
       "\"post\":\"aw5Xq_9jx_oVeeUxZ5nh-w\"},"
       "{\"entity\":\"https://alice.example\"}],"
       "\"activitypub\":{\"id\":\"https://m.example/n/1\","
       "\"url\":\"https://m.example/@bob/1\","
       "\"in_reply_to\":\"https://alice.example/tent/posts/p0\","
       "\"attachments\":[{\"url\":\"https://m.example/f/1.png\","
       "\"mediaType\":\"image/png\",\"name\":\"a cat\"}]}}");

    /* direct: the addressed actors; a reply object with its author */

    IN(NOTE "\"to\":\"https://alice.example\",\"cc\":[],"
       "\"content\":\"dm\",\"inReplyTo\":{\"id\":\"https://x.example/n/9\","
       "\"attributedTo\":\"https://x.example/u/c\"}}",
       "{" BOB STT "\"permissions\":{\"public\":false,\"entities\":"
       "{\"https://alice.example\":true}},\"content\":{\"text\":\"dm\"},"
       "\"mentions\":[{\"entity\":\"https://x.example/u/c\","
       "\"post\":\"0gsMIBxo8kMqXCqIIfvutQ\"}],"
       "\"activitypub\":{\"id\":\"https://m.example/n/1\","
       "\"in_reply_to\":\"https://x.example/n/9\"}}");

    /* followers-only: its collection is no entity; as:Public is public */

    IN(NOTE "\"to\":[\"https://m.example/users/bob/followers\"],"
       "\"content\":\"f\"}",
       "{" BOB STT "\"permissions\":{\"public\":false,\"entities\":{}},"
       "\"content\":{\"text\":\"f\"},\"mentions\":[]," APID "}");
    IN(NOTE "\"cc\":\"as:Public\",\"content\":\"u\"}",
       "{" BOB STT PUBL "\"content\":{\"text\":\"u\"},\"mentions\":[],"
       APID "}");

    /* an Article: an essay; a long Note or one with a summary too */

    IN("{\"type\":\"Article\",\"id\":\"https://m.example/a/1\","
       "\"to\":\"" AS "\",\"name\":\"Title <b>x</b>\","
       "\"summary\":\"<i>sum</i>\",\"content\":\"<h1>B</h1><p>ody</p>\"}",
       "{" BOB EST PUBL "\"content\":{\"title\":\"Title x\","
       "\"excerpt\":\"<i>sum</i>\",\"body\":\"B<p>ody</p>\"},"
       "\"mentions\":[],\"activitypub\":{\"id\":\"https://m.example/a/1\"}}");
    IN(NOTE "\"summary\":\"cw\",\"content\":\"<p>hidden</p>\"}",
       "{" BOB EST "\"permissions\":{\"public\":false,\"entities\":{}},"
       "\"content\":{\"excerpt\":\"cw\",\"body\":\"<p>hidden</p>\"},"
       "\"mentions\":[]," APID "}");

    big = malloc(2000);
    p = stpcpy(big, NOTE "\"content\":\"<p>");
    for (i = 0; i < 256; i++) {
        p = stpcpy(p, "\xc3\xa9");
    }
    strcpy(p, "</p>\"}");
    inbound(__LINE__, big, "{" BOB STT
            "\"permissions\":{\"public\":false,\"entities\":{}},"
            "\"content\":{\"text\":\"" /* 256 characters: a status */
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\"},\"mentions\":[]," APID "}", NULL);

    p = stpcpy(big, NOTE "\"content\":\"<p>");
    for (i = 0; i < 257; i++) {
        p = stpcpy(p, "x");
    }
    strcpy(p, "</p>\"}");

    {
        json_t      *o, *post;
        const char  *err;

        o = parse(big);
        post = ngx_http_tent_ap_to_post(pool, o, &actor, &err);
        ok(__LINE__, post && strcmp(json_string_value(json_object_get(post,
                                    "type")),
                                    "https://tent.io/types/post/essay/v0.1.0")
                     == 0, "257 characters: an essay");
        json_decref(post);
        json_decref(o);
        pool_reset();
    }

    free(big);

    /* a Question is a note; a tag list with duplicates is one mention */

    IN("{\"type\":\"Question\",\"id\":\"https://m.example/q/1\","
       "\"content\":\"pick\",\"oneOf\":[{\"name\":\"a\"}],"
       "\"attributedTo\":[\"https://m.example/users/bob\"],"
       "\"tag\":[{\"type\":\"Mention\",\"href\":\"https://a.example\"},"
       "{\"type\":\"Mention\",\"href\":\"https://a.example\"}]}",
       "{" BOB STT "\"permissions\":{\"public\":false,\"entities\":{}},"
       "\"content\":{\"text\":\"pick\"},"
       "\"mentions\":[{\"entity\":\"https://a.example\"}],"
       "\"activitypub\":{\"id\":\"https://m.example/q/1\"}}");

    /* the same origin: case and default port do not matter */

    IN("{\"type\":\"Note\",\"id\":\"https://M.example:443/n/1\","
       "\"content\":\"\",\"url\":[{\"type\":\"Link\","
       "\"href\":\"https://m.example/@bob/1\"}],\"published\":null}",
       "{" BOB STT "\"permissions\":{\"public\":false,\"entities\":{}},"
       "\"content\":{\"text\":\"\"},\"mentions\":[],"
       "\"activitypub\":{\"id\":\"https://M.example:443/n/1\","
       "\"url\":\"https://m.example/@bob/1\"}}");

    /* refused */

    NO("[]", "not a JSON object");
    NO("{\"type\":\"Create\",\"id\":\"https://m.example/n/1\"}",
       "not a Note");
    NO("{\"type\":[\"Note\"],\"id\":\"https://m.example/n/1\"}", "no type");
    NO("{\"type\":\"Note\"}", "no id");
    NO("{\"type\":\"Note\",\"id\":5}", "no id");
    NO("{\"type\":\"Note\",\"id\":\"tag:m.example,1\"}", "no id");
    NO("{\"type\":\"Note\",\"id\":\"https://evil.example/n/1\"}",
       "not on its actor's origin");
    NO("{\"type\":\"Note\",\"id\":\"http://m.example/n/1\"}",
       "not on its actor's origin");
    NO("{\"type\":\"Note\",\"id\":\"https://m.example:444/n/1\"}",
       "not on its actor's origin");
    NO("{\"type\":\"Note\",\"id\":\"https://m.example.evil.example/n/1\"}",
       "not on its actor's origin");
    NO("{\"type\":\"Note\",\"id\":\"https://m.example@evil.example/n/1\"}",
       "not on its actor's origin");
    NO(NOTE "\"attributedTo\":\"https://m.example/users/eve\"}",
       "not attributed");
    NO(NOTE "\"attributedTo\":5}", "attributedTo");
    NO(NOTE "\"content\":5}", "must be strings");
    NO(NOTE "\"name\":[]}", "must be strings");
    NO(NOTE "\"summary\":{}}", "must be strings");
    NO(NOTE "\"published\":\"yesterday\"}", "RFC 3339");
    NO(NOTE "\"published\":1796300000}", "RFC 3339");
    NO(NOTE "\"url\":5}", "url must be");
    NO(NOTE "\"inReplyTo\":5}", "inReplyTo");
    NO(NOTE "\"inReplyTo\":\"javascript:x\"}", "inReplyTo");
    NO(NOTE "\"inReplyTo\":{\"type\":\"Note\"}}", "inReplyTo");
    NO(NOTE "\"tag\":\"x\"}", "each tag");
    NO(NOTE "\"tag\":[{\"type\":\"Mention\",\"href\":\"mailto:x\"}]}",
       "href");
    NO(NOTE "\"tag\":[{\"type\":\"Mention\"}]}", "href");
    NO(NOTE "\"attachment\":[5]}", "each attachment");
    NO(NOTE "\"attachment\":{\"url\":5}}", "each attachment");
    NO(NOTE "\"attachment\":{\"url\":\"https://m.example/x\","
       "\"mediaType\":5}}", "mediaType");
    NO(NOTE "\"to\":5}", "to and cc");
    NO(NOTE "\"cc\":[5]}", "to and cc");

    big = malloc(70 * 1024 + 100);
    p = stpcpy(big, NOTE "\"content\":\"");
    memset(p, 'x', 65537);
    strcpy(p + 65537, "\"}");
    NO(big, "too large");

    p = stpcpy(big, NOTE "\"tag\":[");
    for (i = 0; i < 33; i++) {
        p = stpcpy(p, i ? ",{\"type\":\"Hashtag\"}" : "{\"type\":\"Hashtag\"}");
    }
    strcpy(p, "]}");
    NO(big, "tag must be");

    p = stpcpy(big, NOTE "\"attachment\":[");
    for (i = 0; i < 9; i++) {
        p = stpcpy(p, i ? ",{\"url\":\"https://m.example/x\"}"
                        : "{\"url\":\"https://m.example/x\"}");
    }
    strcpy(p, "]}");
    NO(big, "attachment must be");

    p = stpcpy(big, NOTE "\"to\":[");
    for (i = 0; i < 40; i++) {
        p = stpcpy(p, i ? ",\"https://a.example\"" : "\"https://a.example\"");
    }
    p = stpcpy(p, "],\"cc\":[");
    for (i = 0; i < 40; i++) {
        p = stpcpy(p, i ? ",\"https://a.example\"" : "\"https://a.example\"");
    }
    strcpy(p, "]}");
    NO(big, "to and cc");
    free(big);

    {
        ngx_str_t    bad = ngx_string("ftp://m.example");
        json_t      *o;
        const char  *err;

        o = parse(NOTE "\"content\":\"x\"}");
        err = NULL;
        ok(__LINE__, ngx_http_tent_ap_to_post(pool, o, &bad, &err) == NULL
                     && err != NULL, "actor not http(s)");
        json_decref(o);
    }

    /* times */

    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "1970-01-01T00:00:00Z",
                                             20, &t) == NGX_OK && t == 0,
       "epoch");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *)
                                             "2026-12-02T14:33:20.123+01:00",
                                             29, &t) == NGX_OK
                 && t == 1796218400, "offset, fraction");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "2024-02-29t00:00:00z",
                                             20, &t) == NGX_OK
                 && t == 1709164800, "leap day");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "2023-02-29T00:00:00Z",
                                             20, &t) == NGX_DECLINED,
       "no leap day");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "2023-13-01T00:00:00Z",
                                             20, &t) == NGX_DECLINED,
       "month 13");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "2023-01-01T00:00:00",
                                             19, &t) == NGX_DECLINED,
       "no zone");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *) "1969-12-31T23:59:59Z",
                                             20, &t) == NGX_DECLINED,
       "before 1970");
    ok(__LINE__, ngx_http_tent_ap_parse_time((u_char *)
                                             "1970-01-01T00:00:00+01:00",
                                             25, &t) == NGX_DECLINED,
       "before 1970 by the offset");

    ngx_str_set(&a, "https://[::1]:8080/x");
    ngx_str_set(&b, "HTTPS://[::1]:08080");
    ok(__LINE__, ngx_http_tent_ap_same_origin(&a, &b) == NGX_OK, "ipv6");
    ngx_str_set(&b, "https://[::1]/");
    ok(__LINE__, ngx_http_tent_ap_same_origin(&a, &b) == NGX_DECLINED,
       "ipv6 port");
    ngx_str_set(&a, "http://a.example:80");
    ngx_str_set(&b, "http://A.EXAMPLE/");
    ok(__LINE__, ngx_http_tent_ap_same_origin(&a, &b) == NGX_OK, "port 80");
}


int
main(void)
{
    uint32_t  c;
    int       i, k;

    for (i = 0; i < 16; i++) {
        c = i;
        for (k = 0; k < 4; k++) {
            c = (c & 1) ? (c >> 1) ^ 0xedb88320 : c >> 1;
        }
        crc32_nibbles[i] = c;
    }

    test_html();
    test_object();
    test_inbound();

    pool_reset();
    free(allocs);

    printf("ap_map_test: %d checks, %d failures\n", checks, failures);

    return failures != 0;
}
