/* rangeset.c - disjoint ranges in sorted chunks under a sorted index. */
#include "rangeset.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define CHUNK RP_RANGESET_CHUNK

void rp_rangeset_init(rp_rangeset *s)
{
    memset(s, 0, sizeof *s);
}

void rp_rangeset_free(rp_rangeset *s)
{
    free(s->slot);
    free(s->key);
    free(s->count);
    free(s->order);
    free(s->lo);
    free(s->spare);
    rp_rangeset_init(s);
}

static void *dup_into(void *dst, const void *src, size_t n)
{
    dst = rp_xrealloc(dst, n ? n : 1);
    if (n)
        memcpy(dst, src, n);
    return dst;
}

void rp_rangeset_copy(rp_rangeset *dst, const rp_rangeset *src)
{
    dst->slot = dup_into(dst->slot, src->slot, (size_t)src->nchunks * CHUNK * sizeof *src->slot);
    dst->key = dup_into(dst->key, src->key, (size_t)src->nchunks * CHUNK * sizeof *src->key);
    dst->count = dup_into(dst->count, src->count, (size_t)src->nchunks * sizeof *src->count);
    dst->order = dup_into(dst->order, src->order, (size_t)src->nord * sizeof *src->order);
    dst->lo = dup_into(dst->lo, src->lo, (size_t)src->nord * sizeof *src->lo);
    dst->spare = dup_into(dst->spare, src->spare, (size_t)src->nspare * sizeof *src->spare);
    dst->nchunks = dst->capchunks = src->nchunks;
    dst->nord = dst->capord = src->nord;
    dst->nspare = dst->capspare = src->nspare;
    dst->len = src->len;
    dst->bytes = src->bytes;
}

/* The last index entry whose chunk starts at or below key (0 when every
 * chunk starts above it, or none exists: check nord). */
static uint32_t chunk_at(const rp_rangeset *s, uint64_t key)
{
    /* Branch-free: the halving step is a conditional move, not a jump the
     * processor mispredicts half the time. */
    const uint64_t *base = s->lo;
    uint32_t n = s->nord;
    while (n > 1) {
        uint32_t half = n / 2;
        base = base[half] <= key ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - s->lo);
}

/* In chunk k: how many ranges start at or below key. */
static uint32_t upper(const rp_rangeset *s, uint32_t k, uint64_t key)
{
    const uint64_t *r = &s->key[(size_t)k * CHUNK], *base = r;
    uint32_t n = s->count[k];
    if (!n)
        return 0;
    while (n > 1) {
        uint32_t half = n / 2;
        base = base[half] <= key ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - r) + (*base <= key);
}

/* The range with the largest start below or at key, or NULL. */
static const rp_range *at_or_before(const rp_rangeset *s, uint64_t key)
{
    if (!s->nord || s->lo[0] > key)
        return NULL;
    uint32_t k = s->order[chunk_at(s, key)], n = upper(s, k, key);
    return n ? &s->slot[(size_t)k * CHUNK + n - 1] : NULL;
}

rp_range *rp_rangeset_before(rp_rangeset *s, uint64_t key)
{
    return (rp_range *)at_or_before(s, key);
}

void rp_rangeset_set_end(rp_rangeset *s, rp_range *r, uint64_t end)
{
    s->bytes += end - r->end;   /* modulo 2^64: a shorter range subtracts */
    r->end = end;
}

const rp_range *rp_rangeset_find(const rp_rangeset *s, uint64_t addr)
{
    const rp_range *r = at_or_before(s, addr);
    return r && addr < r->end ? r : NULL;
}

const rp_range *rp_rangeset_overlap(const rp_rangeset *s, uint64_t start, uint64_t end)
{
    /* Ranges are disjoint, so in start order they are also in end order: the
     * last one starting before end is the only one that can reach start. */
    if (end <= start)
        end = start + 1;
    const rp_range *r = at_or_before(s, end - 1);
    return r && r->end > start ? r : NULL;
}

static uint32_t new_chunk(rp_rangeset *s)
{
    if (s->nspare)
        return s->spare[--s->nspare];
    size_t cap = s->capchunks;
    rp_grow(&s->count, &cap, (size_t)s->nchunks + 1, sizeof *s->count);
    if (cap != s->capchunks) {
        s->slot = rp_xrealloc(s->slot, cap * CHUNK * sizeof *s->slot);
        s->key = rp_xrealloc(s->key, cap * CHUNK * sizeof *s->key);
        s->capchunks = (uint32_t)cap;
    }
    return s->nchunks++;
}

/* Put chunk k into the index at position at. */
static void index_insert(rp_rangeset *s, uint32_t at, uint32_t k)
{
    size_t cap = s->capord;
    rp_grow(&s->order, &cap, (size_t)s->nord + 1, sizeof *s->order);
    if (cap != s->capord) {
        s->lo = rp_xrealloc(s->lo, cap * sizeof *s->lo);
        s->capord = (uint32_t)cap;
    }
    memmove(s->order + at + 1, s->order + at, (s->nord - at) * sizeof *s->order);
    memmove(s->lo + at + 1, s->lo + at, (s->nord - at) * sizeof *s->lo);
    s->order[at] = k;
    s->lo[at] = s->slot[(size_t)k * CHUNK].start;
    s->nord++;
}

static void index_remove(rp_rangeset *s, uint32_t at)
{
    size_t cap = s->capspare;
    rp_grow(&s->spare, &cap, (size_t)s->nspare + 1, sizeof *s->spare);
    s->capspare = (uint32_t)cap;
    s->spare[s->nspare++] = s->order[at];
    memmove(s->order + at, s->order + at + 1, (s->nord - at - 1) * sizeof *s->order);
    memmove(s->lo + at, s->lo + at + 1, (s->nord - at - 1) * sizeof *s->lo);
    s->nord--;
}

/* Insert x at entry i of chunk index entry at (a full chunk splits first). */
static void put_at(rp_rangeset *s, uint32_t at, uint32_t i, const rp_range *x)
{
    uint32_t k = s->order[at];
    if (s->count[k] == CHUNK) {
        /* Full: its upper half moves to a new chunk after it. */
        uint32_t m = new_chunk(s), half = CHUNK / 2;
        memcpy(&s->slot[(size_t)m * CHUNK], &s->slot[(size_t)k * CHUNK + half], half * sizeof *s->slot);
        memcpy(&s->key[(size_t)m * CHUNK], &s->key[(size_t)k * CHUNK + half], half * sizeof *s->key);
        s->count[m] = (uint16_t)half;
        s->count[k] = (uint16_t)half;
        index_insert(s, at + 1, m);
        if (i > half) {
            k = m;
            at++;
            i -= half;
        }
    }
    rp_range *r = &s->slot[(size_t)k * CHUNK];
    uint64_t *key = &s->key[(size_t)k * CHUNK];
    memmove(r + i + 1, r + i, (s->count[k] - i) * sizeof *r);
    memmove(key + i + 1, key + i, (s->count[k] - i) * sizeof *key);
    r[i] = *x;
    key[i] = x->start;
    s->count[k]++;
    s->lo[at] = r[0].start;
    s->len++;
    s->bytes += x->end - x->start;
}

/* Where a range starting at start goes: index entry *at, entry *i of its
 * chunk; *pred and *succ its neighbours (NULL at either end). */
static void place(rp_rangeset *s, uint64_t start, uint32_t *at, uint32_t *i, const rp_range **pred,
                  const rp_range **succ)
{
    *at = chunk_at(s, start);
    uint32_t k = s->order[*at];
    const rp_range *r = &s->slot[(size_t)k * CHUNK];
    *i = s->lo[*at] <= start ? upper(s, k, start) : 0;
    *pred = *i ? &r[*i - 1] : NULL;
    if (*i < s->count[k])
        *succ = &r[*i];
    else if (*at + 1 < s->nord)
        *succ = &s->slot[(size_t)s->order[*at + 1] * CHUNK];
    else
        *succ = NULL;
}

static void first_range(rp_rangeset *s, const rp_range *x)
{
    uint32_t k = new_chunk(s);
    s->count[k] = 1;
    s->slot[(size_t)k * CHUNK] = *x;
    s->key[(size_t)k * CHUNK] = x->start;
    index_insert(s, 0, k);
    s->len++;
    s->bytes += x->end - x->start;
}

void rp_rangeset_insert(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux)
{
    rp_range x = {start, end, val, aux};
    if (!s->nord) {
        first_range(s, &x);
        return;
    }
    uint32_t at, i;
    const rp_range *pred, *succ;
    place(s, start, &at, &i, &pred, &succ);
    put_at(s, at, i, &x);
}

int rp_rangeset_insert_new(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux, rp_range *clash)
{
    rp_range x = {start, end, val, aux};
    if (!s->nord) {
        first_range(s, &x);
        return 1;
    }
    /* One search: the neighbours are the only ranges that can overlap. */
    uint32_t at, i;
    const rp_range *pred, *succ;
    place(s, start, &at, &i, &pred, &succ);
    if (pred && pred->end > start) {
        *clash = *pred;
        return 0;
    }
    if (succ && succ->start < (end > start ? end : start + 1)) {
        *clash = *succ;
        return 0;
    }
    put_at(s, at, i, &x);
    return 1;
}

int rp_rangeset_erase(rp_rangeset *s, uint64_t start, rp_range *out)
{
    if (!s->nord || s->lo[0] > start)
        return 0;
    uint32_t at = chunk_at(s, start), k = s->order[at], i = upper(s, k, start);
    rp_range *r = &s->slot[(size_t)k * CHUNK];
    uint64_t *key = &s->key[(size_t)k * CHUNK];
    if (!i || key[i - 1] != start)
        return 0;
    i--;
    if (out)
        *out = r[i];
    s->len--;
    s->bytes -= r[i].end - r[i].start;
    memmove(r + i, r + i + 1, (s->count[k] - i - 1) * sizeof *r);
    memmove(key + i, key + i + 1, (s->count[k] - i - 1) * sizeof *key);
    if (!--s->count[k]) {
        index_remove(s, at);
        return 1;
    }
    s->lo[at] = r[0].start;
    /* A chunk a quarter full joins its next neighbour when both fit one. */
    if (s->count[k] < CHUNK / 4 && at + 1 < s->nord) {
        uint32_t n = s->order[at + 1];
        if (s->count[k] + s->count[n] <= CHUNK) {
            memcpy(r + s->count[k], &s->slot[(size_t)n * CHUNK], s->count[n] * sizeof *r);
            memcpy(key + s->count[k], &s->key[(size_t)n * CHUNK], s->count[n] * sizeof *key);
            s->count[k] = (uint16_t)(s->count[k] + s->count[n]);
            s->count[n] = 0;
            index_remove(s, at + 1);
        }
    }
    return 1;
}

int rp_rangeset_walk(const rp_rangeset *s, int (*fn)(const rp_range *r, void *arg), void *arg)
{
    for (uint32_t at = 0; at < s->nord; at++) {
        uint32_t k = s->order[at];
        for (uint32_t i = 0; i < s->count[k]; i++)
            if (fn(&s->slot[(size_t)k * CHUNK + i], arg))
                return 1;
    }
    return 0;
}

int rp_rangeset_walk_range(rp_rangeset *s, uint64_t start, uint64_t end, int (*fn)(rp_range *r, void *arg),
                           void *arg)
{
    if (!s->nord)
        return 0;
    if (end <= start)
        end = start + 1;
    /* From the range starting at or below start (it may reach into it). */
    uint32_t at = chunk_at(s, start), k = s->order[at];
    uint32_t i = s->lo[at] <= start ? upper(s, k, start) : 0;
    i = i ? i - 1 : 0;
    for (; at < s->nord; at++, i = 0) {
        k = s->order[at];
        for (; i < s->count[k]; i++) {
            rp_range *r = &s->slot[(size_t)k * CHUNK + i];
            if (r->start >= end)
                return 0;
            if (r->end > start && fn(r, arg))
                return 1;
        }
    }
    return 0;
}
