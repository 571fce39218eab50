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

/* tf_get_uv for the records' hot paths (records.h): the same values, the
 * same cursor, fewer instructions per byte where the cursor has
 * TF_VARINT_MAX bytes left.  The loop spends six instructions a byte (its
 * bound, shift and exit tests); unrolled, each byte is added at its place
 * whole, high bit and all, and those bits are taken back at the end: a
 * load, a shift, an add and a test. */
#define TF_UV_BIAS(k) ((((1ull << (7 * (k))) - 1) / 127) << 7)   /* 0x80 at each of k bytes */

static inline __attribute__((always_inline)) uint64_t tf_get_uv_fast(tf_cursor *c)
{
    const uint8_t *p = c->p;
    if (c->end - p < TF_VARINT_MAX)
        return tf_get_uv(c);
    uint64_t v = p[0], b;
    if (v < 0x80) {
        c->p = p + 1;
        return v;
    }
#define TF_UV_STEP(k)                       \
    b = p[k];                               \
    v += b << (7 * (k));                    \
    if (b < 0x80) {                         \
        c->p = p + (k) + 1;                 \
        return v - TF_UV_BIAS(k);           \
    }
    TF_UV_STEP(1) TF_UV_STEP(2) TF_UV_STEP(3) TF_UV_STEP(4) TF_UV_STEP(5)
    TF_UV_STEP(6) TF_UV_STEP(7) TF_UV_STEP(8) TF_UV_STEP(9)
#undef TF_UV_STEP
    c->bad = 1;   /* an 11th byte: too long, as tf_get_uv says */
    return 0;
}

static inline __attribute__((always_inline)) uint32_t tf_get_u32_fast(tf_cursor *c)
{
    uint64_t v = tf_get_uv_fast(c);
    if (v > UINT32_MAX)
        c->bad = 1;
    return (uint32_t)v;
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
