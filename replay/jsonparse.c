/* jsonparse.c - recursive descent over one JSON document, in place. */
#include "jsonparse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define MAX_DEPTH 64

typedef struct parser {
    jp_doc *d;
    char *p, *start;
    char *err;
    size_t errlen;
    int depth;
} parser;

void jp_init(jp_doc *d) { memset(d, 0, sizeof *d); }

void jp_free(jp_doc *d)
{
    free(d->n);
    memset(d, 0, sizeof *d);
}

static int fail(parser *ps, const char *what)
{
    snprintf(ps->err, ps->errlen, "%s at offset %zu", what, (size_t)(ps->p - ps->start));
    return -1;
}

static void skip_space(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static uint32_t new_node(parser *ps, int type)
{
    rp_grow(&ps->d->n, &ps->d->cap, ps->d->len + 1, sizeof *ps->d->n);
    jp_node *n = &ps->d->n[ps->d->len];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    n->child = n->next = JP_NONE;
    return (uint32_t)ps->d->len++;
}

static int hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned x = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
        if (x == 16)
            return -1;
        *v = *v << 4 | x;
    }
    return 0;
}

static char *put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        *out++ = (char)cp;
    } else if (cp < 0x800) {
        *out++ = (char)(0xC0 | cp >> 6);
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (char)(0xE0 | cp >> 12);
        *out++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (char)(0xF0 | cp >> 18);
        *out++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *out++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* A string at ps->p (on its opening quote), unescaped where it stands. */
static int string(parser *ps, const char **s, size_t *len)
{
    char *in = ++ps->p, *out = in;
    *s = out;
    for (;;) {
        char c = *in++;
        if (c == '"')
            break;
        if (!c || (unsigned char)c < 0x20) {
            ps->p = in - 1;
            return fail(ps, "unterminated string");
        }
        if (c != '\\') {
            *out++ = c;
            continue;
        }
        unsigned cp, lo;
        switch (c = *in++) {
        case '"': case '\\': case '/': *out++ = c; break;
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u':
            if (hex4(in, &cp))
                return fail(ps, "bad \\u escape");
            in += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && in[0] == '\\' && in[1] == 'u' && !hex4(in + 2, &lo) &&
                lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                in += 6;
            } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
                /* A lone \udcXX stands for the byte XX that was not UTF-8
                 * (how our JSON writer escapes it, as PEP 383 does). */
                *out++ = (char)(cp - 0xDC00);
                break;
            }
            out = put_utf8(out, cp);
            break;
        default:
            ps->p = in - 1;
            return fail(ps, "bad escape");
        }
    }
    *len = (size_t)(out - *s);
    *out = '\0';   /* out < in: the closing quote's place at the latest */
    ps->p = in;
    return 0;
}

static int number(parser *ps, uint32_t id)
{
    char *end;
    jp_node *n = &ps->d->n[id];
    const char *s = ps->p;
    int neg = *s == '-';
    unsigned long long u = strtoull(s + neg, &end, 10);
    if (end > s + neg && *end != '.' && *end != 'e' && *end != 'E') {
        n->type = JP_INT;
        n->negative = (uint8_t)neg;
        n->u = u;
        n->real = neg ? -(double)u : (double)u;
        ps->p = end;
        return 0;
    }
    n->type = JP_REAL;
    n->real = strtod(s, &end);
    if (end == s)
        return fail(ps, "bad number");
    ps->p = end;
    return 0;
}

static int value(parser *ps, uint32_t id);

/* Members or elements up to the closing bracket; appended as children of id. */
static int container(parser *ps, uint32_t id, int object)
{
    char close = object ? '}' : ']';
    uint32_t last = JP_NONE;
    ps->p++;
    skip_space(ps);
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t keylen;
        skip_space(ps);
        if (object) {
            if (*ps->p != '"')
                return fail(ps, "expected a member name");
            if (string(ps, &key, &keylen))
                return -1;
            skip_space(ps);
            if (*ps->p++ != ':')
                return fail(ps, "expected ':'");
            skip_space(ps);
        }
        uint32_t child = new_node(ps, JP_NULL);
        ps->d->n[child].key = key;
        if (last == JP_NONE)
            ps->d->n[id].child = child;
        else
            ps->d->n[last].next = child;
        last = child;
        if (value(ps, child))
            return -1;
        skip_space(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p++ == close)
            return 0;
        ps->p--;
        return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(ps->p, word, n))
        return fail(ps, "unexpected text");
    ps->p += n;
    return 0;
}

static int value(parser *ps, uint32_t id)
{
    int rc;
    skip_space(ps);
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "nested too deep");
    switch (*ps->p) {
    case '{':
    case '[':
        ps->d->n[id].type = *ps->p == '{' ? JP_OBJECT : JP_ARRAY;
        rc = container(ps, id, *ps->p == '{');
        break;
    case '"': {
        const char *s;
        size_t len;
        rc = string(ps, &s, &len);
        ps->d->n[id].type = JP_STRING;
        ps->d->n[id].str = s;
        ps->d->n[id].len = len;
        break;
    }
    case 't': rc = literal(ps, "true"); ps->d->n[id].type = JP_BOOL; ps->d->n[id].u = 1; break;
    case 'f': rc = literal(ps, "false"); ps->d->n[id].type = JP_BOOL; break;
    case 'n': rc = literal(ps, "null"); break;
    default: rc = number(ps, id); break;
    }
    ps->depth--;
    return rc;
}

int jp_parse(jp_doc *d, char *text, char *err, size_t errlen)
{
    parser ps = {d, text, text, err, errlen, 0};
    d->len = 0;
    if (value(&ps, new_node(&ps, JP_NULL)))
        return -1;
    skip_space(&ps);
    return *ps.p ? fail(&ps, "text after the value") : 0;
}

const jp_node *jp_first(const jp_doc *d, const jp_node *c)
{
    return c && (c->type == JP_ARRAY || c->type == JP_OBJECT) && c->child != JP_NONE ? &d->n[c->child] : NULL;
}

const jp_node *jp_next(const jp_doc *d, const jp_node *n) { return n->next != JP_NONE ? &d->n[n->next] : NULL; }

const jp_node *jp_get(const jp_doc *d, const jp_node *obj, const char *key)
{
    if (!obj || obj->type != JP_OBJECT)
        return NULL;
    for (const jp_node *m = jp_first(d, obj); m; m = jp_next(d, m))
        if (!strcmp(m->key, key))
            return m;
    return NULL;
}

uint64_t jp_u64(const jp_doc *d, const jp_node *obj, const char *key, uint64_t dflt)
{
    const jp_node *m = jp_get(d, obj, key);
    if (!m)
        return dflt;
    if (m->type == JP_INT)
        return m->negative ? 0 - m->u : m->u;  /* -1 is all ones, as in C */
    if (m->type == JP_REAL && m->real >= 0 && m->real < 18446744073709551616.0)
        return (uint64_t)m->real;
    if (m->type == JP_BOOL)
        return m->u;
    if (m->type == JP_STRING && m->len > 2 && m->len <= 18 && m->str[0] == '0' && (m->str[1] | 0x20) == 'x') {
        /* Addresses written as "0x..." (a stack's ip and offset). */
        uint64_t v = 0;
        for (size_t i = 2; i < m->len; i++) {
            char c = m->str[i];
            int x = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
            if (x < 0)
                return dflt;
            v = v << 4 | (uint64_t)x;
        }
        return v;
    }
    return dflt;
}

int64_t jp_i64(const jp_doc *d, const jp_node *obj, const char *key, int64_t dflt)
{
    const jp_node *m = jp_get(d, obj, key);
    if (!m)
        return dflt;
    /* Numbers out of int64's range count as mistyped. */
    if (m->type == JP_INT && m->negative && m->u <= (uint64_t)INT64_MAX + 1)
        return m->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m->u;
    if (m->type == JP_INT && !m->negative && m->u <= INT64_MAX)
        return (int64_t)m->u;
    if (m->type == JP_REAL && m->real >= -9223372036854775808.0 && m->real < 9223372036854775808.0)
        return (int64_t)m->real;
    return dflt;
}

const char *jp_str(const jp_doc *d, const jp_node *obj, const char *key, size_t *len)
{
    const jp_node *m = jp_get(d, obj, key);
    if (!m || m->type != JP_STRING)
        return NULL;
    if (len)
        *len = m->len;
    return m->str;
}
