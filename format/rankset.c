/*
 * rankset.c - see rankset.h.
 */
#include <string.h>

#include "rankset.h"

#define W TF_RANK_WINDOW
#define HMASK (2 * W - 1)

/* Set bits of x.  Without -mpopcnt (Debian's x86-64 baseline lacks the
 * instruction) __builtin_popcountll is a call into libgcc's table walk,
 * the bit trick inlines to a dozen instructions. */
static inline uint32_t pop64(uint64_t x)
{
#ifdef __POPCNT__
    return (uint32_t)__builtin_popcountll(x);
#else
    x -= x >> 1 & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + (x >> 2 & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* The position of x's k-th lowest set bit (0: the lowest), k < pop64(x).
 * Clearing bits one at a time was a third of a column reader's time on a
 * pool stream (a rank among freed blocks lands deep in a word): this finds
 * the byte from the bytes' running counts, then clears at most 7 bits. */
static inline uint32_t select64(uint64_t x, uint32_t k)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t c = x - (x >> 1 & 0x5555555555555555ull);
    c = (c & 0x3333333333333333ull) + (c >> 2 & 0x3333333333333333ull);
    c = (c + (c >> 4)) & 0x0f0f0f0f0f0f0f0full;
    uint64_t upto = c * ones;   /* byte i: the set bits of bytes 0..i (at most 64) */
    /* The bytes whose running count is at most k come before the bit's. */
    uint64_t le = ((k * ones | highs) - upto) & highs;
    uint32_t byte = (uint32_t)(((le >> 7) * ones) >> 56);
    uint32_t before = (uint32_t)((upto << 8) >> (8 * byte)) & 0xff;
    uint64_t b = x >> (8 * byte) & 0xff;
    for (k -= before; k; k--)
        b &= b - 1;
    return 8 * byte + (uint32_t)__builtin_ctzll(b);
}

static uint32_t hash_of(uint64_t addr)
{
    /* Addresses share their low bits (alignment): mix before masking. */
    addr *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(addr >> 40) & HMASK;
}

void tf_rankset_clear(tf_rankset *s)
{
    /* Only what is in use is dirty: a mostly empty set clears fast. */
    if (s->added == 0)
        return;
    if (s->count < W / 16) {
        for (uint32_t w = 0; w < W / 64; w++)
            for (uint64_t bits = s->used[w]; bits; bits &= bits - 1) {
                uint32_t h = hash_of(s->key[w * 64 + (uint32_t)__builtin_ctzll(bits)]);
                while (s->hash[h])
                    s->hash[h] = 0, h = (h + 1) & HMASK;
            }
    } else {
        memset(s->hash, 0, sizeof s->hash);
    }
    memset(s->used, 0, sizeof s->used);
    s->added = 0;
    s->count = 0;
}

static int is_used(const tf_rankset *s, uint32_t slot)
{
    return s->used[slot / 64] >> (slot % 64) & 1;
}

/* Used slots in [a, b], a <= b. */
static uint32_t count_range(const tf_rankset *s, uint32_t a, uint32_t b)
{
    uint32_t wa = a / 64, wb = b / 64, n = 0;
    uint64_t lo = ~0ull << (a % 64), hi = ~0ull >> (63 - b % 64);
    if (wa == wb)
        return pop64(s->used[wa] & lo & hi);
    n = pop64(s->used[wa] & lo);
    for (uint32_t w = wa + 1; w < wb; w++)
        n += pop64(s->used[w]);
    return n + pop64(s->used[wb] & hi);
}

/* The memo needs no invalidation: a slot in use holding addr is addr's
 * (the hash keeps addresses unique), whatever happened since. */
static int find(tf_rankset *s, uint64_t addr)
{
    uint32_t m = s->memo % W;
    if (s->key[m] == addr && is_used(s, m))
        return (int)m;
    for (uint32_t h = hash_of(addr); s->hash[h]; h = (h + 1) & HMASK) {
        uint32_t slot = s->hash[h] - 1u;
        if (s->key[slot] == addr) {
            s->memo = slot;
            return (int)slot;
        }
    }
    return -1;
}

static void hash_insert(tf_rankset *s, uint32_t slot)
{
    uint32_t h = hash_of(s->key[slot]);
    while (s->hash[h])
        h = (h + 1) & HMASK;
    s->hash[h] = (uint16_t)(slot + 1);
}

static void hash_delete(tf_rankset *s, uint32_t slot)
{
    uint32_t i = hash_of(s->key[slot]);
    while (s->hash[i] != slot + 1)
        i = (i + 1) & HMASK;
    /* Backward shift: move up every later entry of the run that may not
     * stay behind the hole. */
    for (uint32_t j = (i + 1) & HMASK; s->hash[j]; j = (j + 1) & HMASK) {
        uint32_t home = hash_of(s->key[s->hash[j] - 1u]);
        /* j's entry may stay when its home lies cyclically in (i, j]. */
        if (((j - home) & HMASK) < ((j - i) & HMASK))
            continue;
        s->hash[i] = s->hash[j];
        i = j;
    }
    s->hash[i] = 0;
}

static void drop(tf_rankset *s, uint32_t slot)
{
    hash_delete(s, slot);
    s->used[slot / 64] &= ~(1ull << (slot % 64));
    s->count--;
}

int tf_rankset_remove(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int slot = find(s, addr);
    if (slot < 0)
        return 0;
    if (val)
        *val = s->val[slot];
    drop(s, (uint32_t)slot);
    return 1;
}

void tf_rankset_add(tf_rankset *s, uint64_t addr, uint64_t val)
{
    tf_rankset_remove(s, addr, NULL);
    uint32_t slot = (uint32_t)(s->added % W);
    if (is_used(s, slot))
        drop(s, slot);   /* added W additions ago: out of the window */
    s->key[slot] = addr;
    s->val[slot] = val;
    s->used[slot / 64] |= 1ull << (slot % 64);
    hash_insert(s, slot);
    s->count++;
    s->added++;
}

int tf_rankset_get(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int slot = find(s, addr);
    if (slot < 0)
        return 0;
    *val = s->val[slot];
    return 1;
}

/* The ring's newest slot is (added - 1) % W; ranks count back from it. */
uint32_t tf_rankset_rank(tf_rankset *s, uint64_t addr)
{
    int found = find(s, addr);
    if (found < 0)
        return 0;
    uint32_t slot = (uint32_t)found, last = (uint32_t)((s->added - 1) % W);
    if (slot <= last)
        return count_range(s, slot, last);
    return count_range(s, slot, W - 1) + count_range(s, 0, last);
}

uint64_t tf_rankset_at(tf_rankset *s, uint32_t r)
{
    if (r == 0 || r > s->count)
        return 0;
    /* Back from the newest slot, a word at a time. */
    uint32_t last = (uint32_t)((s->added - 1) % W), w = last / 64;
    uint64_t bits = s->used[w] & (~0ull >> (63 - last % 64));
    for (;;) {
        uint32_t n = pop64(bits);
        if (r <= n)
            break;
        r -= n;
        w = (w + W / 64 - 1) % (W / 64);
        bits = s->used[w];
        if (w == last / 64)   /* round to the newest's word: its older half */
            bits &= ~(~0ull >> (63 - last % 64));
    }
    /* the r-th highest set bit of bits: the (n - r)-th lowest */
    s->memo = w * 64 + select64(bits, pop64(bits) - r);
    return s->key[s->memo];
}
