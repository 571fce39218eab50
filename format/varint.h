/*
 * varint.h - the two integer encodings of the log (FORMAT.md section 2, "Primitive encodings").
 *
 * Unsigned values are LEB128: seven bits per byte, least significant group
 * first, high bit set on every byte but the last; at most 10 bytes.  Signed
 * values are zigzag-mapped first so that small magnitudes stay short.
 *
 * Decoding goes through a cursor that never reads past its end: a value that
 * runs off the end, or is longer than 10 bytes, sets `bad` and yields 0.
 */
#ifndef TF_VARINT_H
#define TF_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define TF_VARINT_MAX 10

static inline uint8_t *tf_put_uv(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t tf_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t tf_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

typedef struct tf_cursor {
    const uint8_t *p, *end;
    int bad;
} tf_cursor;

static inline uint64_t tf_get_uv(tf_cursor *c)
{
    const uint8_t *p = c->p;
    uint64_t v = 0;
    if (p < c->end && *p < 0x80) {  /* most values fit one byte */
        c->p = p + 1;
        return *p;
    }
    for (unsigned shift = 0; shift < 64 && p < c->end; shift += 7) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            c->p = p;
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

/* A uv that must fit 32 bits (the cursor goes bad when it does not). */
static inline uint32_t tf_get_u32(tf_cursor *c)
{
    uint64_t v = tf_get_uv(c);
    if (v > UINT32_MAX)
        c->bad = 1;
    return (uint32_t)v;
}

/* A length-prefixed byte string; the bytes stay in the cursor's buffer. */
static inline const uint8_t *tf_get_bytes(tf_cursor *c, uint64_t *len)
{
    uint64_t n = tf_get_uv(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = c->p;
    c->p += n;
    *len = n;
    return s;
}

#endif
