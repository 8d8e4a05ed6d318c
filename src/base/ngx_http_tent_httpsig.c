
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * HTTP Signatures, the parsers: a draft-cavage-http-signatures-12
 * Signature header, and an RFC 9421 Signature-Input with its Signature
 * (Structured Field dictionaries, RFC 8941).  Bounded: a header over
 * NGX_HTTP_TENT_HTTPSIG_HEADER_MAX, more than ..._COVERED covered
 * components or ..._MEMBERS dictionary members, a parameter given twice
 * are refused, each with its own code (ngx_http_tent_httpsig_strerror).
 * Plain strings in, pointing into the header: no request, no store.
 * httpsig_base.c builds what is signed, verifies and signs.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_httpsig.h"


static ngx_int_t ngx_http_tent_httpsig_cavage_headers(
    ngx_http_tent_httpsig_t *sig, ngx_str_t *list);
static ngx_int_t ngx_http_tent_httpsig_component(ngx_http_tent_httpsig_t *sig,
    u_char *name, size_t len);
static ngx_int_t ngx_http_tent_httpsig_number(u_char *p, size_t len,
    ngx_uint_t decimal, time_t *t);
static ngx_int_t ngx_http_tent_httpsig_alg(ngx_http_tent_httpsig_t *sig,
    ngx_str_t *name, ngx_uint_t rfc9421);
static u_char *ngx_http_tent_httpsig_sf_key(u_char *p, u_char *last);
static u_char *ngx_http_tent_httpsig_sf_string(u_char *p, u_char *last,
    ngx_str_t *s);
static u_char *ngx_http_tent_httpsig_sf_skip(u_char *p, u_char *last);
static u_char *ngx_http_tent_httpsig_ows(u_char *p, u_char *last);
static ngx_int_t ngx_http_tent_httpsig_member(ngx_str_t *dict,
    ngx_str_t *label, ngx_str_t *value);
static ngx_int_t ngx_http_tent_httpsig_inner(ngx_http_tent_httpsig_t *sig,
    ngx_str_t *value);


static const char  *ngx_http_tent_httpsig_errors[] = {
    "ok",
    "signature header too long",
    "malformed signature header",
    "a signature parameter given twice",
    "too many covered components",
    "a required signature parameter is missing",
    "unknown or unusable signature algorithm",
    "malformed base64",
    "unknown covered component",
    "a covered header is absent",
    "signature does not verify",
    "outside the time window",
    "unusable key",
    "digest does not match",
    "out of memory"
};


const char *
ngx_http_tent_httpsig_strerror(ngx_int_t rc)
{
    if (rc < 0 || rc > NGX_HTTP_TENT_HTTPSIG_NOMEM) {
        return "unknown error";
    }

    return ngx_http_tent_httpsig_errors[rc];
}


static void
ngx_http_tent_httpsig_init(ngx_http_tent_httpsig_t *sig)
{
    ngx_memzero(sig, sizeof(ngx_http_tent_httpsig_t));
    sig->created = -1;
    sig->expires = -1;
}


/*
 * keyId="...",algorithm="...",headers="...",signature="...",
 * created=N,expires=N: names as the draft spells them; values quoted
 * without quotes or backslashes inside, created and expires bare digits
 * (or quoted, as some send them).  An optional "Signature " in front
 * (the Authorization form).  Unknown names are skipped.
 */

ngx_int_t
ngx_http_tent_httpsig_parse_cavage(ngx_str_t *header,
    ngx_http_tent_httpsig_t *sig)
{
    u_char     *p, *last, *name, *value;
    size_t      nlen, vlen;
    ngx_int_t   rc;
    ngx_str_t   headers, *dst;
    ngx_uint_t  quoted, seen_created, seen_expires;

    ngx_http_tent_httpsig_init(sig);

    if (header->len > NGX_HTTP_TENT_HTTPSIG_HEADER_MAX) {
        return NGX_HTTP_TENT_HTTPSIG_TOO_LONG;
    }

    p = header->data;
    last = p + header->len;

    if (header->len > 10
        && ngx_strncasecmp(p, (u_char *) "Signature ", 10) == 0)
    {
        p += 10;
    }

    ngx_str_null(&headers);
    seen_created = 0;
    seen_expires = 0;

    for ( ;; ) {
        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        if (p == last) {
            break;
        }

        name = p;

        while (p < last && ((*p >= 'a' && *p <= 'z')
                            || (*p >= 'A' && *p <= 'Z')))
        {
            p++;
        }

        nlen = p - name;

        if (nlen == 0 || p == last || *p != '=') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        p++;

        quoted = (p < last && *p == '"');

        if (quoted) {
            p++;
            value = p;

            while (p < last && *p != '"') {
                if (*p == '\\' || *p < 0x20 || *p == 0x7f) {
                    return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
                }

                p++;
            }

            if (p == last) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            vlen = p - value;
            p++;

        } else {
            value = p;

            while (p < last && ((*p >= '0' && *p <= '9') || *p == '.')) {
                p++;
            }

            vlen = p - value;
        }

        if (p < last && *p != ',' && *p != ' ' && *p != '\t') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        dst = NULL;

        if (nlen == 5 && ngx_strncmp(name, "keyId", 5) == 0) {
            dst = &sig->key_id;

        } else if (nlen == 9 && ngx_strncmp(name, "algorithm", 9) == 0) {
            dst = &sig->algorithm;

        } else if (nlen == 7 && ngx_strncmp(name, "headers", 7) == 0) {
            dst = &headers;

        } else if (nlen == 9 && ngx_strncmp(name, "signature", 9) == 0) {
            dst = &sig->signature;

        } else if (nlen == 7 && ngx_strncmp(name, "created", 7) == 0) {
            if (seen_created++) {
                return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
            }

            rc = ngx_http_tent_httpsig_number(value, vlen, 0, &sig->created);
            if (rc != NGX_OK) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            continue;

        } else if (nlen == 7 && ngx_strncmp(name, "expires", 7) == 0) {
            if (seen_expires++) {
                return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
            }

            rc = ngx_http_tent_httpsig_number(value, vlen, 1, &sig->expires);
            if (rc != NGX_OK) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            continue;
        }

        if (dst == NULL) {
            continue;
        }

        if (!quoted) {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        if (dst->data) {
            return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
        }

        dst->data = value;
        dst->len = vlen;
    }

    if (sig->key_id.len == 0 || sig->signature.len == 0) {
        return NGX_HTTP_TENT_HTTPSIG_MISSING;
    }

    rc = ngx_http_tent_httpsig_alg(sig, &sig->algorithm, 0);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    if (headers.data == NULL) {
        /* the draft's default; what Mastodon and C.1 take */
        ngx_str_set(&headers, "date");
    }

    return ngx_http_tent_httpsig_cavage_headers(sig, &headers);
}


/* headers="(request-target) host date": names split on spaces */

static ngx_int_t
ngx_http_tent_httpsig_cavage_headers(ngx_http_tent_httpsig_t *sig,
    ngx_str_t *list)
{
    u_char     *p, *last, *name;
    ngx_int_t   rc;

    p = list->data;
    last = p + list->len;

    for ( ;; ) {
        while (p < last && *p == ' ') {
            p++;
        }

        if (p == last) {
            break;
        }

        name = p;

        while (p < last && *p != ' ') {
            p++;
        }

        rc = ngx_http_tent_httpsig_component(sig, name, p - name);
        if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
            return rc;
        }
    }

    if (sig->ncomponents == 0) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    for (rc = 0; rc < (ngx_int_t) sig->ncomponents; rc++) {
        name = sig->components[rc].data;

        if (sig->components[rc].len == sizeof("(created)") - 1
            && ngx_strncmp(name, "(created)", 9) == 0
            && sig->created == -1)
        {
            return NGX_HTTP_TENT_HTTPSIG_MISSING;
        }

        if (sig->components[rc].len == sizeof("(expires)") - 1
            && ngx_strncmp(name, "(expires)", 9) == 0
            && sig->expires == -1)
        {
            return NGX_HTTP_TENT_HTTPSIG_MISSING;
        }
    }

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * A covered component: a header name (token characters; cavage any
 * case, RFC 9421 lower case only), a cavage pseudo-header or an
 * RFC 9421 derived component; at most ..._COVERED, each once.
 */

static ngx_int_t
ngx_http_tent_httpsig_component(ngx_http_tent_httpsig_t *sig, u_char *name,
    size_t len)
{
    u_char        c;
    size_t        i;
    ngx_uint_t    n;
    const char  **table;

    static const char  *cavage[] = {
        "(request-target)", "(created)", "(expires)", NULL
    };

    static const char  *derived[] = {
        "@method", "@target-uri", "@authority", "@path", "@query",
        "@request-target", NULL
    };

    if (len == 0 || len > 64) {
        return NGX_HTTP_TENT_HTTPSIG_COMPONENT;
    }

    if (name[0] == '(' || name[0] == '@') {
        table = sig->rfc9421 ? derived : cavage;

        for (n = 0; table[n]; n++) {
            if (ngx_strlen(table[n]) == len
                && ngx_strncasecmp(name, (u_char *) table[n], len) == 0)
            {
                break;
            }
        }

        if (table[n] == NULL
            || (sig->rfc9421 && ngx_strncmp(name, table[n], len) != 0))
        {
            return NGX_HTTP_TENT_HTTPSIG_COMPONENT;
        }

    } else {
        for (i = 0; i < len; i++) {
            c = name[i];

            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                || c == '-' || c == '_' || c == '.'
                || (!sig->rfc9421 && c >= 'A' && c <= 'Z'))
            {
                continue;
            }

            return NGX_HTTP_TENT_HTTPSIG_COMPONENT;
        }
    }

    for (n = 0; n < sig->ncomponents; n++) {
        if (sig->components[n].len == len
            && ngx_strncasecmp(sig->components[n].data, name, len) == 0)
        {
            return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
        }
    }

    if (sig->ncomponents == NGX_HTTP_TENT_HTTPSIG_COVERED) {
        return NGX_HTTP_TENT_HTTPSIG_TOO_MANY;
    }

    sig->components[sig->ncomponents].data = name;
    sig->components[sig->ncomponents].len = len;
    sig->ncomponents++;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/* 1 to 12 digits; "decimal": a fraction after a dot is dropped */

static ngx_int_t
ngx_http_tent_httpsig_number(u_char *p, size_t len, ngx_uint_t decimal,
    time_t *t)
{
    u_char  *last;
    time_t   n;

    last = p + len;
    n = 0;

    if (len == 0 || *p < '0' || *p > '9') {
        return NGX_ERROR;
    }

    while (p < last && *p >= '0' && *p <= '9') {
        if (n >= 100000000000LL) {
            return NGX_ERROR;
        }

        n = n * 10 + (*p++ - '0');
    }

    if (p < last) {
        if (!decimal || *p++ != '.' || p == last || last - p > 3) {
            return NGX_ERROR;
        }

        while (p < last) {
            if (*p < '0' || *p > '9') {
                return NGX_ERROR;
            }

            p++;
        }
    }

    *t = n;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_httpsig_alg(ngx_http_tent_httpsig_t *sig, ngx_str_t *name,
    ngx_uint_t rfc9421)
{
    ngx_uint_t  i;

    static struct {
        const char  *name;
        ngx_uint_t   alg;
        ngx_uint_t   rfc9421;
    } algs[] = {
        { "rsa-sha256", NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256, 0 },
        { "hs2019", NGX_HTTP_TENT_HTTPSIG_ALG_HS2019, 0 },
        { "rsa-v1_5-sha256", NGX_HTTP_TENT_HTTPSIG_ALG_RSA_V15, 1 },
        { "rsa-pss-sha512", NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS, 1 },
        { "ed25519", NGX_HTTP_TENT_HTTPSIG_ALG_ED25519, 1 },
        { NULL, 0, 0 }
    };

    if (name->data == NULL) {
        sig->alg = NGX_HTTP_TENT_HTTPSIG_ALG_NONE;
        return NGX_HTTP_TENT_HTTPSIG_OK;
    }

    for (i = 0; algs[i].name; i++) {
        if (algs[i].rfc9421 == rfc9421
            && ngx_strlen(algs[i].name) == name->len
            && ngx_strncmp(algs[i].name, name->data, name->len) == 0)
        {
            sig->alg = algs[i].alg;
            return NGX_HTTP_TENT_HTTPSIG_OK;
        }
    }

    return NGX_HTTP_TENT_HTTPSIG_ALGORITHM;
}


/*
 * RFC 9421: Signature-Input's first member names the signature (its
 * label), its inner list the covered components, its parameters
 * created, expires, keyid, alg, nonce and tag; Signature's member of the
 * same label its bytes.  A member of either dictionary given twice
 * counts as the last (RFC 8941), so its label may appear but once here.
 */

ngx_int_t
ngx_http_tent_httpsig_parse_rfc9421(ngx_str_t *input, ngx_str_t *signature,
    ngx_http_tent_httpsig_t *sig)
{
    u_char     *p, *last;
    ngx_int_t   rc;
    ngx_str_t   value, label;

    ngx_http_tent_httpsig_init(sig);
    sig->rfc9421 = 1;

    if (input->len > NGX_HTTP_TENT_HTTPSIG_HEADER_MAX
        || signature->len > NGX_HTTP_TENT_HTTPSIG_HEADER_MAX)
    {
        return NGX_HTTP_TENT_HTTPSIG_TOO_LONG;
    }

    p = ngx_http_tent_httpsig_ows(input->data, input->data + input->len);
    last = ngx_http_tent_httpsig_sf_key(p, input->data + input->len);

    if (last == NULL || last == p) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    label.data = p;
    label.len = last - p;
    sig->label = label;

    rc = ngx_http_tent_httpsig_member(input, &label, &value);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    rc = ngx_http_tent_httpsig_inner(sig, &value);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    rc = ngx_http_tent_httpsig_member(signature, &label, &value);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    /* :base64: and no parameters we would use */

    p = value.data;
    last = p + value.len;

    if (value.len < 2 || *p != ':') {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    for (p++; p < last && *p != ':'; p++) { /* void */ }

    if (p == last) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    sig->signature.data = value.data + 1;
    sig->signature.len = p - value.data - 1;

    if (sig->signature.len == 0) {
        return NGX_HTTP_TENT_HTTPSIG_MISSING;
    }

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * The value of "label" in a dictionary: members walked by syntax, at
 * most ..._MEMBERS; the label found twice is refused.
 */

static ngx_int_t
ngx_http_tent_httpsig_member(ngx_str_t *dict, ngx_str_t *label,
    ngx_str_t *value)
{
    u_char      *p, *last, *key, *end;
    ngx_uint_t   n;

    p = dict->data;
    last = p + dict->len;
    value->data = NULL;
    value->len = 0;

    for (n = 0; ; n++) {
        p = ngx_http_tent_httpsig_ows(p, last);

        if (p == last) {
            break;
        }

        if (n == NGX_HTTP_TENT_HTTPSIG_MEMBERS) {
            return NGX_HTTP_TENT_HTTPSIG_TOO_MANY;
        }

        key = p;
        p = ngx_http_tent_httpsig_sf_key(p, last);

        if (p == NULL || p == key || p == last || *p != '=') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        end = p++;
        p = ngx_http_tent_httpsig_sf_skip(p, last);

        if (p == NULL) {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        if ((size_t) (end - key) == label->len
            && ngx_strncmp(key, label->data, label->len) == 0)
        {
            if (value->data) {
                return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
            }

            value->data = end + 1;
            value->len = p - end - 1;
        }

        p = ngx_http_tent_httpsig_ows(p, last);

        if (p == last) {
            break;
        }

        if (*p != ',') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        p++;

        if (ngx_http_tent_httpsig_ows(p, last) == last) {
            /* a trailing comma */
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }
    }

    if (value->data == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_MISSING;
    }

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/* ("@method" "host");created=1;keyid="k": components and parameters */

static ngx_int_t
ngx_http_tent_httpsig_inner(ngx_http_tent_httpsig_t *sig, ngx_str_t *value)
{
    u_char     *p, *last, *key, *v;
    size_t      klen;
    ngx_int_t   rc;
    ngx_str_t   s, *dst;
    time_t     *t;

    p = value->data;
    last = p + value->len;
    sig->params = *value;

    if (p == last || *p++ != '(') {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    for ( ;; ) {
        while (p < last && *p == ' ') {
            p++;
        }

        if (p == last) {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        if (*p == ')') {
            p++;
            break;
        }

        if (*p != '"') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        p = ngx_http_tent_httpsig_sf_string(p, last, &s);
        if (p == NULL) {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        if (p < last && *p == ';') {
            /* component parameters (sf, key, bs, req, tr, name) */
            return NGX_HTTP_TENT_HTTPSIG_COMPONENT;
        }

        if (p < last && *p != ' ' && *p != ')') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        rc = ngx_http_tent_httpsig_component(sig, s.data, s.len);
        if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
            return rc;
        }
    }

    while (p < last) {
        if (*p++ != ';') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        while (p < last && *p == ' ') {
            p++;
        }

        key = p;
        p = ngx_http_tent_httpsig_sf_key(p, last);

        if (p == NULL || p == key) {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        klen = p - key;

        if (p == last || *p != '=') {
            /* a boolean true parameter: none of ours */
            continue;
        }

        v = ++p;
        dst = NULL;
        t = NULL;

        if (klen == 7 && ngx_strncmp(key, "created", 7) == 0) {
            t = &sig->created;

        } else if (klen == 7 && ngx_strncmp(key, "expires", 7) == 0) {
            t = &sig->expires;

        } else if (klen == 5 && ngx_strncmp(key, "keyid", 5) == 0) {
            dst = &sig->key_id;

        } else if (klen == 3 && ngx_strncmp(key, "alg", 3) == 0) {
            dst = &sig->algorithm;

        } else if (klen == 5 && ngx_strncmp(key, "nonce", 5) == 0) {
            dst = &sig->nonce;

        } else if (klen == 3 && ngx_strncmp(key, "tag", 3) == 0) {
            dst = &sig->tag;
        }

        if (t) {
            while (p < last && *p >= '0' && *p <= '9') {
                p++;
            }

            if (*t != -1) {
                return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
            }

            if (ngx_http_tent_httpsig_number(v, p - v, 0, t) != NGX_OK) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

        } else if (dst) {
            if (*p != '"') {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            p = ngx_http_tent_httpsig_sf_string(p, last, &s);
            if (p == NULL) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            if (dst->data) {
                return NGX_HTTP_TENT_HTTPSIG_DUPLICATE;
            }

            *dst = s;

        } else {
            p = ngx_http_tent_httpsig_sf_skip(p, last);
            if (p == NULL) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }
        }

        if (p < last && *p != ';') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }
    }

    if (sig->ncomponents == 0 && sig->created == -1) {
        /* nothing of the message or its time covered */
        return NGX_HTTP_TENT_HTTPSIG_MISSING;
    }

    if (sig->key_id.len == 0) {
        return NGX_HTTP_TENT_HTTPSIG_MISSING;
    }

    return ngx_http_tent_httpsig_alg(sig, &sig->algorithm, 1);
}


/* key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ) */

static u_char *
ngx_http_tent_httpsig_sf_key(u_char *p, u_char *last)
{
    if (p == last || !((*p >= 'a' && *p <= 'z') || *p == '*')) {
        return NULL;
    }

    for (p++; p < last; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')
            || *p == '_' || *p == '-' || *p == '.' || *p == '*')
        {
            continue;
        }

        break;
    }

    return p;
}


/*
 * An sf-string whose text is used as is: printable ASCII, no escape
 * (none of the names or parameters we read needs one).
 */

static u_char *
ngx_http_tent_httpsig_sf_string(u_char *p, u_char *last, ngx_str_t *s)
{
    p++;
    s->data = p;

    while (p < last && *p != '"') {
        if (*p == '\\' || *p < 0x20 || *p >= 0x7f) {
            return NULL;
        }

        p++;
    }

    if (p == last) {
        return NULL;
    }

    s->len = p - s->data;

    return p + 1;
}


/*
 * A member's value skipped by syntax, with its parameters: an inner
 * list, a string (escapes allowed), a byte sequence, or a bare item.
 */

static u_char *
ngx_http_tent_httpsig_sf_skip(u_char *p, u_char *last)
{
    u_char      q, *start;
    ngx_uint_t  depth;

    depth = 0;
    q = 0;
    start = p;

    for ( ; p < last; p++) {
        if (q) {
            if (q == '"' && *p == '\\') {
                if (++p == last) {
                    return NULL;
                }

                continue;
            }

            if (*p == q) {
                q = 0;

            } else if (*p < 0x20 || *p >= 0x7f) {
                return NULL;
            }

            continue;
        }

        switch (*p) {

        case '"':
            q = *p;
            break;

        case ':':
            /* a byte sequence, where a value starts (a token has ':') */
            if (p == start || p[-1] == '=') {
                q = *p;
            }

            break;

        case '(':
            if (depth++) {
                return NULL;
            }

            break;

        case ')':
            if (depth-- == 0) {
                return NULL;
            }

            break;

        case ',':
            if (depth == 0) {
                return p;
            }

            return NULL;

        case ' ':
        case '\t':
            if (depth == 0) {
                return p;
            }

            break;

        default:
            if (*p < 0x20 || *p >= 0x7f) {
                return NULL;
            }
        }
    }

    return (q || depth) ? NULL : p;
}


static u_char *
ngx_http_tent_httpsig_ows(u_char *p, u_char *last)
{
    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    return p;
}
