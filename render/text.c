/* text.c - visible escapes for log strings, and sizes. */
#include "text.h"

#include <inttypes.h>
#include <string.h>

size_t rn_utf8_len(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n || n > left)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* U+0080..U+009F: C1 controls (CSI among them), two bytes in UTF-8. */
static int is_c1(const unsigned char *s, size_t n)
{
    return n == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

char *rn_text_n(char *buf, size_t len, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0;
    if (!len)
        return buf;
    for (size_t i = 0; i < n;) {
        char esc[8];
        size_t k = rn_utf8_len(p + i, n - i), elen;
        const char *out;
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
            out = (const char *)p + i, elen = 1, k = 1;
        } else if (k && !is_c1(p + i, k)) {
            out = (const char *)p + i, elen = k;
        } else {
            k = 1;
            out = esc;
            if (p[i] == '\\' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r') {
                esc[0] = '\\';
                esc[1] = p[i] == '\\' ? '\\' : p[i] == '\n' ? 'n' : p[i] == '\t' ? 't' : 'r';
                elen = 2;
            } else {
                esc[0] = '\\', esc[1] = 'x', esc[2] = hex[p[i] >> 4], esc[3] = hex[p[i] & 15];
                elen = 4;
            }
        }
        if (at + elen >= len)
            break;
        memcpy(buf + at, out, elen);
        at += elen;
        i += k;
    }
    buf[at] = '\0';
    return buf;
}

int rn_needs_escape(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
            i++;
            continue;
        }
        size_t k = rn_utf8_len(p + i, n - i);
        if (!k || is_c1(p + i, k))
            return 1;
        i += k;
    }
    return 0;
}

char *rn_text(char *buf, size_t len, const char *s)
{
    if (!s)
        s = "?";
    return rn_text_n(buf, len, s, strlen(s));
}

void rn_fputs(const char *s, FILE *f)
{
    char buf[1024];
    size_t n = s ? strlen(s) : 1;
    if (!s)
        s = "?";
    /* Long strings go in pieces cut between characters. */
    while (n) {
        size_t piece = n < 240 ? n : 240;
        while (piece < n && piece > 1 && ((unsigned char)s[piece] & 0xc0) == 0x80)
            piece--;
        fputs(rn_text_n(buf, sizeof buf, s, piece), f);
        s += piece;
        n -= piece;
    }
}

void rn_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", n);
        return;
    }
    double v = (double)n / 1024;
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, unit[u]);
}
