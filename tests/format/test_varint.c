/*
 * test_varint.c - the records' fast varint reader (varint.h
 * tf_get_uv_fast) reads what tf_get_uv reads: the same value, the same
 * cursor position, the same verdict, for values of every length, overlong
 * and over-long encodings, and cursors that end anywhere inside them.
 */
#include "tf_test.h"
#include "varint.h"

/* One encoding in buf[0..len), read both ways with the cursor ending at
 * buf + end (the bytes past it are noise: never part of the value). */
static void same_both_ways(const uint8_t *buf, size_t end)
{
    tf_cursor a = { buf, buf + end, 0 }, b = a;
    uint64_t va = tf_get_uv(&a), vb = tf_get_uv_fast(&b);
    CHECK(va == vb && a.p == b.p && a.bad == b.bad);
    if (va != vb || a.p != b.p || a.bad != b.bad)
        fprintf(stderr, "  end %zu: %llx/%td/%d against %llx/%td/%d\n", end, (unsigned long long)va,
                a.p - buf, a.bad, (unsigned long long)vb, b.p - buf, b.bad);
    tf_cursor c = { buf, buf + end, 0 }, d = c;
    uint32_t ua = tf_get_u32(&c), ub = tf_get_u32_fast(&d);
    CHECK(ua == ub && c.p == d.p && c.bad == d.bad);
}

int main(void)
{
    uint64_t rng = 17;
    uint8_t buf[32];
    /* Canonical encodings of values of every bit length, with the cursor
     * ending at each byte up to well past the value. */
    for (int bits = 0; bits <= 64; bits++)
        for (int rep = 0; rep < 200; rep++) {
            uint64_t v = bits ? tf_test_rand(&rng) >> (64 - bits) | 1ull << (bits - 1) : 0;
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = (uint8_t)tf_test_rand(&rng);
            uint8_t *e = tf_put_uv(buf, v);
            for (size_t end = 0; end <= sizeof buf; end++)
                same_both_ways(buf, end);
            tf_cursor c = { buf, buf + sizeof buf, 0 };
            CHECK(tf_get_uv_fast(&c) == v && c.p == e && !c.bad);
        }
    /* Arbitrary bytes: overlong forms, 10-byte values whose last byte has
     * more than the 64th bit, runs of continuation bytes of every length
     * (11 and more: too long), each ended anywhere. */
    for (int rep = 0; rep < 20000; rep++) {
        int run = (int)(tf_test_rand(&rng) % 14);
        for (size_t i = 0; i < sizeof buf; i++) {
            uint8_t b = (uint8_t)tf_test_rand(&rng);
            buf[i] = (int)i < run ? b | 0x80 : (int)i == run ? b & 0x7f : b;
        }
        if (rep % 4 == 0)
            buf[run] = 0;   /* an overlong zero ending */
        for (size_t end = 0; end <= sizeof buf; end++)
            same_both_ways(buf, end);
    }
    return tf_test_done("format.varint");
}
