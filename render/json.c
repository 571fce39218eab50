/* json.c - the streaming JSON writer. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"

#define FLUSH_AT (64 * 1024)

static void grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need)
        ncap *= 2;
    char *nbuf = realloc(*buf, ncap);
    if (!nbuf) {
        fprintf(stderr, "out of memory (%zu bytes of JSON)\n", ncap);
        exit(2);
    }
    *buf = nbuf;
    *cap = ncap;
}

static void put(rn_json *j, const char *s, size_t n)
{
    grow(&j->buf, &j->cap, j->len + n);
    memcpy(j->buf + j->len, s, n);
    j->len += n;
}

static void putc_(rn_json *j, char c)
{
    if (j->len == j->cap)
        grow(&j->buf, &j->cap, j->len + 1);
    j->buf[j->len++] = c;
}

void rn_json_init(rn_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = 1;
}

void rn_json_flush(rn_json *j)
{
    if (j->len)
        fwrite(j->buf, 1, j->len, j->f);
    j->len = 0;
}

int rn_json_close(rn_json *j)
{
    rn_json_flush(j);
    free(j->buf);
    j->buf = NULL;
    j->cap = 0;
    return ferror(j->f) ? -1 : 0;
}

void rn_json_quote(char **out, size_t *len, size_t *cap, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    /* Worst case: every byte a 6-byte escape. */
    grow(out, cap, *len + 6 * n + 2);
    char *o = *out + *len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *o++ = (char)c;
        } else if (c == '"' || c == '\\') {
            *o++ = '\\', *o++ = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            *o++ = '\\', *o++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c < 0x20) {
            memcpy(o, "\\u00", 4), o += 4, *o++ = hex[c >> 4], *o++ = hex[c & 15];
        } else {
            size_t k = rn_utf8_len(s + i, n - i);
            if (k) {
                memcpy(o, s + i, k);
                o += k;
                i += k - 1;
            } else {
                memcpy(o, "\\udc", 4), o += 4, *o++ = hex[c >> 4], *o++ = hex[c & 15];
            }
        }
    }
    *o++ = '"';
    *len = (size_t)(o - *out);
}

static void string(rn_json *j, const char *s, size_t n)
{
    rn_json_quote(&j->buf, &j->len, &j->cap, s, n);
}

/* Comma and key before a value. */
static void lead(rn_json *j, const char *key)
{
    if (!j->first[j->depth])
        putc_(j, ',');
    j->first[j->depth] = 0;
    if (key) {
        string(j, key, strlen(key));
        putc_(j, ':');
    }
}

static void open_(rn_json *j, const char *key, char c)
{
    lead(j, key);
    putc_(j, c);
    if (j->depth < RN_JSON_DEPTH - 1)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(rn_json *j, char c)
{
    putc_(j, c);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0) {
        /* One top-level value per line (JSON lines): the next stands alone. */
        putc_(j, '\n');
        j->first[0] = 1;
        rn_json_flush(j);
    } else if (j->len >= FLUSH_AT) {
        rn_json_flush(j);
    }
}

void rn_json_obj(rn_json *j, const char *key) { open_(j, key, '{'); }
void rn_json_end_obj(rn_json *j) { close_(j, '}'); }
void rn_json_arr(rn_json *j, const char *key) { open_(j, key, '['); }
void rn_json_end_arr(rn_json *j) { close_(j, ']'); }

static void number(rn_json *j, uint64_t v, int negative)
{
    char digits[24];
    int n = 0;
    do
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    while (v /= 10);
    if (negative)
        digits[sizeof digits - 1 - n++] = '-';
    put(j, digits + sizeof digits - n, (size_t)n);
}

void rn_json_u64(rn_json *j, const char *key, uint64_t v)
{
    lead(j, key);
    number(j, v, 0);
}

void rn_json_i64(rn_json *j, const char *key, int64_t v)
{
    lead(j, key);
    number(j, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void rn_json_str(rn_json *j, const char *key, const char *s)
{
    lead(j, key);
    if (s)
        string(j, s, strlen(s));
    else
        put(j, "null", 4);
}

void rn_json_strn(rn_json *j, const char *key, const char *s, size_t n)
{
    lead(j, key);
    if (s)
        string(j, s, n);
    else
        put(j, "null", 4);
}

void rn_json_hex(rn_json *j, const char *key, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char digits[20];
    int n = 0;
    lead(j, key);
    do
        digits[sizeof digits - 1 - n++] = hex[v & 15];
    while (v >>= 4);
    put(j, "\"0x", 3);
    put(j, digits + sizeof digits - n, (size_t)n);
    putc_(j, '"');
}

void rn_json_bool(rn_json *j, const char *key, int v)
{
    lead(j, key);
    put(j, v ? "true" : "false", v ? 4 : 5);
}

void rn_json_null(rn_json *j, const char *key)
{
    lead(j, key);
    put(j, "null", 4);
}

void rn_json_double(rn_json *j, const char *key, double v)
{
    char text[64];
    lead(j, key);
    int n = snprintf(text, sizeof text, "%.4f", v);
    put(j, text, n > 0 ? (size_t)n : 0);
}

void rn_json_fixed3(rn_json *j, const char *key, uint64_t whole, unsigned frac)
{
    lead(j, key);
    number(j, whole, 0);
    char f[4] = {'.', (char)('0' + frac / 100 % 10), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
    put(j, f, 4);
}

void rn_json_raw(rn_json *j, const char *key, const char *json, size_t n)
{
    lead(j, key);
    put(j, json, n);
}
