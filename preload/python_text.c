/*
 * python_text.c - the text of a str object as UTF-8, read in place.
 *
 * PyUnicode_AsUTF8 may allocate (it caches the encoding on the object), which
 * a hook must not do.  Code objects' file and function names are compact
 * strings: ASCII ones hold their bytes right after the header, others may have
 * the UTF-8 cached, and otherwise we encode their 1/2/4-byte characters
 * ourselves.
 */
#include "python_text.h"

#include <string.h>

#define FIELD(obj, off, type) (*(const type *)((const char *)(obj) + (off)))

enum { KIND_1BYTE = 1, KIND_2BYTE = 2, KIND_4BYTE = 4 };

static size_t put_utf8(char *out, size_t room, uint32_t c)
{
    char b[4];
    size_t n;
    if (c >= 0xDC80 && c <= 0xDCFF) {
        /* A byte of a file name that is not UTF-8, as Python decoded it
         * (surrogateescape): the byte itself, as os.fsencode gives it back,
         * so that the name is the file's. */
        b[0] = (char)(c - 0xDC00);
        n = 1;
    } else if (c < 0x80) { b[0] = (char)c; n = 1; }
    else if (c < 0x800) { b[0] = (char)(0xC0 | c >> 6); b[1] = (char)(0x80 | (c & 0x3F)); n = 2; }
    else if (c < 0x10000) {
        b[0] = (char)(0xE0 | c >> 12); b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | c >> 18); b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F)); b[3] = (char)(0x80 | (c & 0x3F)); n = 4;
    }
    if (n > room)
        return 0;
    memcpy(out, b, n);
    return n;
}

static size_t encode_chars(const void *data, int kind, size_t length, char *out, size_t cap, int *cut)
{
    size_t used = 0;
    for (size_t i = 0; i < length; i++) {
        uint32_t c = kind == KIND_1BYTE ? ((const uint8_t *)data)[i]
                   : kind == KIND_2BYTE ? ((const uint16_t *)data)[i]
                   : ((const uint32_t *)data)[i];
        size_t n = put_utf8(out + used, cap - used, c);
        if (n == 0) {
            *cut = 1;
            break;
        }
        used += n;
    }
    return used;
}

static size_t text_utf8(const py_layout *l, const py_object *s, char *out, size_t cap, int *cut);

/* The longest start of s, at most n bytes, that ends between characters
 * (s holds more than n bytes of UTF-8). */
static size_t whole_chars(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

size_t py_text_utf8(const py_layout *l, const py_object *s, char *out, size_t cap, int *truncated)
{
    int cut = 0;
    size_t n = text_utf8(l, s, out, cap, &cut);
    if (truncated)
        *truncated = cut;
    return n;
}

static size_t text_utf8(const py_layout *l, const py_object *s, char *out, size_t cap, int *cut)
{
    if (!s || cap == 0)
        return 0;
    uint32_t state = FIELD(s, l->str_state, uint32_t);
    int kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    size_t length = (size_t)FIELD(s, l->str_length, int64_t);
    if (!compact)
        return 0;               /* legacy strings (3.8-3.11 only): never code names */
    if (ascii) {
        size_t n = length < cap ? length : cap;
        *cut = n < length;
        memcpy(out, (const char *)s + l->ascii_size, n);
        return n;
    }
    const char *utf8 = FIELD(s, l->compact_utf8, const char *);
    if (utf8) {
        size_t whole = (size_t)FIELD(s, l->compact_utf8_length, int64_t);
        size_t n = whole < cap ? whole : whole_chars(utf8, cap);
        *cut = n < whole;
        memcpy(out, utf8, n);
        return n;
    }
    if (kind != KIND_1BYTE && kind != KIND_2BYTE && kind != KIND_4BYTE)
        return 0;
    return encode_chars((const char *)s + l->compact_size, kind, length, out, cap, cut);
}
