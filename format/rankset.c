/*
 * rankset.c - see rankset.h.
 */
#include <string.h>

#include "rankset.h"

#define W TF_RANK_WINDOW
#define HMASK (2 * W - 1)

#define INLINE static inline __attribute__((always_inline))

/* Set bits of x.  Without -mpopcnt (Debian's x86-64 baseline lacks the
 * instruction) __builtin_popcountll is a call into libgcc's table walk,
 * the bit trick inlines to a dozen instructions.  The rank walks below are
 * compiled two or three times on x86-64, with `hw` 0 and, in functions
 * built for the POPCNT instruction, 1 (2: BMI2 too); which runs is asked
 * of the CPU (hw_ask). */
INLINE uint32_t pop64(uint64_t x, const int hw)
{
#ifdef __POPCNT__
    (void)hw;
    return (uint32_t)__builtin_popcountll(x);
#else
    if (hw)
        return (uint32_t)__builtin_popcountll(x);
    x -= x >> 1 & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + (x >> 2 & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* Which versions run: 0 the portable ones, 1 those built for POPCNT, 2
 * those built for POPCNT and BMI2.  The address of a rank selects a bit in
 * a word: one PDEP where the CPU has BMI2 and runs it fast (AMD's family
 * 17h, Zen 1 and 2, runs it in microcode, up to hundreds of cycles: the
 * table select there), else select64's byte counts and table, 42
 * instructions of a column reader's ~680 per event. */
static int portable_only;   /* tf_rankset_portable: 1 level 0, 2 no higher than 1 */

/* The level, -1 until asked.  Asked of the CPU once, then one load:
 * asking at each call (libgcc's CPU model, three loads and tests) was 9
 * of tf_rankset_at's ~50 instructions.  __builtin_cpu_init first: the
 * model is filled by a constructor, which may not have run yet.  Threads
 * asking at once store the same answer. */
static int hw_level = -1;

static __attribute__((noinline, cold)) int hw_ask(void)
{
    int level = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (portable_only != 1 && __builtin_cpu_supports("popcnt"))
        level = !portable_only && __builtin_cpu_supports("bmi2") && !__builtin_cpu_is("amdfam17h") ? 2 : 1;
#endif
    __atomic_store_n(&hw_level, level, __ATOMIC_RELAXED);
    return level;
}

/* The level (asked when not yet): callers test its usual values first, so
 * that their path is one load and a test or two. */
#define HW_LEVEL() __atomic_load_n(&hw_level, __ATOMIC_RELAXED)

void tf_rankset_portable(int on)
{
    portable_only = on;
    __atomic_store_n(&hw_level, -1, __ATOMIC_RELAXED);
}

#if defined(__x86_64__)
#define HW_TARGET __attribute__((target("popcnt"), noinline))
#define BMI2_TARGET __attribute__((target("popcnt,bmi2"), noinline))
#else
#define HW_TARGET __attribute__((unused))
#define BMI2_TARGET __attribute__((unused))
#endif

/* Nibble k of select8[b]: the position of byte b's k-th lowest set bit (k
 * below its count).  Clearing bits one at a time instead is a loop whose
 * length no branch predictor knows: a twentieth of a column reader's time.
 * Made by: for b in 0..255, the positions of b's set bits, lowest first,
 * one per nibble from the lowest (tests/format/test_columns.c checks it). */
static const uint32_t select8[256] = {
    0x00000000, 0x00000000, 0x00000001, 0x00000010, 0x00000002, 0x00000020, 0x00000021, 0x00000210,
    0x00000003, 0x00000030, 0x00000031, 0x00000310, 0x00000032, 0x00000320, 0x00000321, 0x00003210,
    0x00000004, 0x00000040, 0x00000041, 0x00000410, 0x00000042, 0x00000420, 0x00000421, 0x00004210,
    0x00000043, 0x00000430, 0x00000431, 0x00004310, 0x00000432, 0x00004320, 0x00004321, 0x00043210,
    0x00000005, 0x00000050, 0x00000051, 0x00000510, 0x00000052, 0x00000520, 0x00000521, 0x00005210,
    0x00000053, 0x00000530, 0x00000531, 0x00005310, 0x00000532, 0x00005320, 0x00005321, 0x00053210,
    0x00000054, 0x00000540, 0x00000541, 0x00005410, 0x00000542, 0x00005420, 0x00005421, 0x00054210,
    0x00000543, 0x00005430, 0x00005431, 0x00054310, 0x00005432, 0x00054320, 0x00054321, 0x00543210,
    0x00000006, 0x00000060, 0x00000061, 0x00000610, 0x00000062, 0x00000620, 0x00000621, 0x00006210,
    0x00000063, 0x00000630, 0x00000631, 0x00006310, 0x00000632, 0x00006320, 0x00006321, 0x00063210,
    0x00000064, 0x00000640, 0x00000641, 0x00006410, 0x00000642, 0x00006420, 0x00006421, 0x00064210,
    0x00000643, 0x00006430, 0x00006431, 0x00064310, 0x00006432, 0x00064320, 0x00064321, 0x00643210,
    0x00000065, 0x00000650, 0x00000651, 0x00006510, 0x00000652, 0x00006520, 0x00006521, 0x00065210,
    0x00000653, 0x00006530, 0x00006531, 0x00065310, 0x00006532, 0x00065320, 0x00065321, 0x00653210,
    0x00000654, 0x00006540, 0x00006541, 0x00065410, 0x00006542, 0x00065420, 0x00065421, 0x00654210,
    0x00006543, 0x00065430, 0x00065431, 0x00654310, 0x00065432, 0x00654320, 0x00654321, 0x06543210,
    0x00000007, 0x00000070, 0x00000071, 0x00000710, 0x00000072, 0x00000720, 0x00000721, 0x00007210,
    0x00000073, 0x00000730, 0x00000731, 0x00007310, 0x00000732, 0x00007320, 0x00007321, 0x00073210,
    0x00000074, 0x00000740, 0x00000741, 0x00007410, 0x00000742, 0x00007420, 0x00007421, 0x00074210,
    0x00000743, 0x00007430, 0x00007431, 0x00074310, 0x00007432, 0x00074320, 0x00074321, 0x00743210,
    0x00000075, 0x00000750, 0x00000751, 0x00007510, 0x00000752, 0x00007520, 0x00007521, 0x00075210,
    0x00000753, 0x00007530, 0x00007531, 0x00075310, 0x00007532, 0x00075320, 0x00075321, 0x00753210,
    0x00000754, 0x00007540, 0x00007541, 0x00075410, 0x00007542, 0x00075420, 0x00075421, 0x00754210,
    0x00007543, 0x00075430, 0x00075431, 0x00754310, 0x00075432, 0x00754320, 0x00754321, 0x07543210,
    0x00000076, 0x00000760, 0x00000761, 0x00007610, 0x00000762, 0x00007620, 0x00007621, 0x00076210,
    0x00000763, 0x00007630, 0x00007631, 0x00076310, 0x00007632, 0x00076320, 0x00076321, 0x00763210,
    0x00000764, 0x00007640, 0x00007641, 0x00076410, 0x00007642, 0x00076420, 0x00076421, 0x00764210,
    0x00007643, 0x00076430, 0x00076431, 0x00764310, 0x00076432, 0x00764320, 0x00764321, 0x07643210,
    0x00000765, 0x00007650, 0x00007651, 0x00076510, 0x00007652, 0x00076520, 0x00076521, 0x00765210,
    0x00007653, 0x00076530, 0x00076531, 0x00765310, 0x00076532, 0x00765320, 0x00765321, 0x07653210,
    0x00007654, 0x00076540, 0x00076541, 0x00765410, 0x00076542, 0x00765420, 0x00765421, 0x07654210,
    0x00076543, 0x00765430, 0x00765431, 0x07654310, 0x00765432, 0x07654320, 0x07654321, 0x76543210,
};

/* The position of x's k-th lowest set bit (0: the lowest), k < pop64(x).
 * Clearing bits one at a time was a third of a column reader's time on a
 * pool stream (a rank among freed blocks lands deep in a word): this finds
 * the byte from the bytes' running counts, then the bit in a table (`hw`
 * 2: in a function built for BMI2, PDEP puts bit k's one on it). */
INLINE uint32_t select64(uint64_t x, uint32_t k, const int hw)
{
#if defined(__x86_64__)
    if (hw == 2) {
        /* asm, not _pdep_u64: the intrinsic may not be inlined into the
         * other versions, whose `hw` folds this away only later. */
        uint64_t bit;
        __asm__("pdepq %2, %1, %0" : "=r"(bit) : "r"(1ull << k), "rm"(x));
        return (uint32_t)__builtin_ctzll(bit);
    }
#else
    (void)hw;
#endif
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t c = x - (x >> 1 & 0x5555555555555555ull);
    c = (c & 0x3333333333333333ull) + (c >> 2 & 0x3333333333333333ull);
    c = (c + (c >> 4)) & 0x0f0f0f0f0f0f0f0full;
    uint64_t upto = c * ones;   /* byte i: the set bits of bytes 0..i (at most 64) */
    /* The bytes whose running count is at most k come before the bit's. */
    uint64_t le = ((k * ones | highs) - upto) & highs;
    uint32_t byte = (uint32_t)(((le >> 7) * ones) >> 56);
    uint32_t before = (uint32_t)((upto << 8) >> (8 * byte)) & 0xff;
    return 8 * byte + (select8[x >> (8 * byte) & 0xff] >> (4 * (k - before)) & 7);
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
INLINE uint32_t count_range(const tf_rankset *s, uint32_t a, uint32_t b, const int hw)
{
    uint32_t wa = a / 64, wb = b / 64, n = 0;
    uint64_t lo = ~0ull << (a % 64), hi = ~0ull >> (63 - b % 64);
    if (wa == wb)
        return pop64(s->used[wa] & lo & hi, hw);
    n = pop64(s->used[wa] & lo, hw);
    for (uint32_t w = wa + 1; w < wb; w++)
        n += pop64(s->used[w], hw);
    return n + pop64(s->used[wb] & hi, hw);
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

static void hash_delete(tf_rankset *s, uint32_t slot)
{
    /* The slot knows its entry: most deletions follow an at() or a memo
     * hit, which probed nothing (a remembered probe position, checked
     * before use, missed after every at(): a probe again, a tenth of a
     * column reader's rank set instructions). */
    uint32_t i = s->pos[slot];
    /* Backward shift: move up every later entry of the run that may not
     * stay behind the hole. */
    for (uint32_t j = (i + 1) & HMASK; s->hash[j]; j = (j + 1) & HMASK) {
        uint32_t moved = s->hash[j] - 1u, home = hash_of(s->key[moved]);
        /* j's entry may stay when its home lies cyclically in (i, j]. */
        if (((j - home) & HMASK) < ((j - i) & HMASK))
            continue;
        s->hash[i] = s->hash[j];
        s->pos[moved] = (uint16_t)i;
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

void tf_rankset_drop_(tf_rankset *s, uint32_t slot)
{
    drop(s, slot);
}

int tf_rankset_remove_(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int slot = find(s, addr);
    if (slot < 0)
        return 0;
    if (val)
        *val = s->val[slot];
    drop(s, (uint32_t)slot);
    return 1;
}

/* Adds addr in the ring's next slot, which is free. */
INLINE void add_in(tf_rankset *s, uint32_t slot, uint64_t addr, uint64_t val)
{
    /* One probe finds addr, held in another slot (its hash entry then names
     * the new slot: same address, same place in the hash), or the free
     * place for it: what removing it and inserting it again would leave,
     * for one probe instead of three. */
    uint32_t h = hash_of(addr);
    for (; s->hash[h]; h = (h + 1) & HMASK) {
        uint32_t old = s->hash[h] - 1u;
        if (s->key[old] == addr) {
            s->used[old / 64] &= ~(1ull << (old % 64));
            s->count--;
            break;
        }
    }
    s->hash[h] = (uint16_t)(slot + 1);
    s->pos[slot] = (uint16_t)h;
    s->key[slot] = addr;
    s->val[slot] = val;
    s->used[slot / 64] |= 1ull << (slot % 64);
    s->count++;
    s->added++;
}

/* The next slot still holds what was added W additions ago (addr itself,
 * perhaps): out of the window.  Apart, so that the usual add calls
 * nothing and saves no registers (six pushes and six pops were a quarter
 * of its instructions). */
static __attribute__((noinline)) void add_pushing_out(tf_rankset *s, uint32_t slot, uint64_t addr,
                                                      uint64_t val)
{
    drop(s, slot);
    add_in(s, slot, addr, val);
}

void tf_rankset_add(tf_rankset *s, uint64_t addr, uint64_t val)
{
    uint32_t slot = (uint32_t)(s->added % W);
    if (is_used(s, slot))
        add_pushing_out(s, slot, addr, val);
    else
        add_in(s, slot, addr, val);
}

int tf_rankset_get_(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int slot = find(s, addr);
    if (slot < 0)
        return 0;
    *val = s->val[slot];
    return 1;
}

/* The ring's newest slot is (added - 1) % W; ranks count back from it. */
INLINE uint32_t rank_of(const tf_rankset *s, uint32_t slot, const int hw)
{
    uint32_t last = (uint32_t)((s->added - 1) % W);
    if (slot <= last)
        return count_range(s, slot, last, hw);
    return count_range(s, slot, W - 1, hw) + count_range(s, 0, last, hw);
}

static __attribute__((noinline)) uint32_t rank_of_portable(const tf_rankset *s, uint32_t slot)
{
    return rank_of(s, slot, 0);
}

static HW_TARGET uint32_t rank_of_hw(const tf_rankset *s, uint32_t slot)
{
    return rank_of(s, slot, 1);
}

uint32_t tf_rankset_rank(tf_rankset *s, uint64_t addr)
{
    int found = find(s, addr);
    if (found < 0)
        return 0;
    int level = HW_LEVEL();
    if (level > 0 || (level < 0 && hw_ask() > 0))
        return rank_of_hw(s, (uint32_t)found);
    return rank_of_portable(s, (uint32_t)found);
}

INLINE uint64_t at(tf_rankset *s, uint32_t r, const int hw)
{
    /* Back from the newest slot, a word at a time. */
    uint32_t last = (uint32_t)((s->added - 1) % W), w = last / 64;
    uint64_t bits = s->used[w] & (~0ull >> (63 - last % 64));
    for (;;) {
        uint32_t n = pop64(bits, hw);
        if (r <= n)
            break;
        r -= n;
        w = (w + W / 64 - 1) % (W / 64);
        bits = s->used[w];
        if (w == last / 64)   /* round to the newest's word: its older half */
            bits &= ~(~0ull >> (63 - last % 64));
    }
    /* the r-th highest set bit of bits: the (n - r)-th lowest */
    s->memo = w * 64 + select64(bits, pop64(bits, hw) - r, hw);
    return s->key[s->memo];
}

/* Each version out of line, the caller a switch of tail calls: with the
 * portable one inlined there, every call saved its registers. */
static __attribute__((noinline)) uint64_t at_portable(tf_rankset *s, uint32_t r)
{
    return at(s, r, 0);
}

static HW_TARGET uint64_t at_hw(tf_rankset *s, uint32_t r)
{
    return at(s, r, 1);
}

static BMI2_TARGET uint64_t at_bmi2(tf_rankset *s, uint32_t r)
{
    return at(s, r, 2);
}

uint64_t tf_rankset_at(tf_rankset *s, uint32_t r)
{
    if (r == 0 || r > s->count)
        return 0;
    int level = HW_LEVEL();
    if (level < 0)
        level = hw_ask();
    if (level == 2)
        return at_bmi2(s, r);
    return level ? at_hw(s, r) : at_portable(s, r);
}
