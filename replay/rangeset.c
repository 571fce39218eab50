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
    free(s->hint);
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
    /* The same slots: the positions hold for the copy too. */
    size_t nhint = src->hint ? (size_t)1 << src->hintbits : 0;
    if (nhint) {
        dst->hint = dup_into(dst->hint, src->hint, nhint * sizeof *src->hint);
    } else {
        free(dst->hint);
        dst->hint = NULL;
    }
    dst->hintbits = src->hintbits;
}

/* Sets this small are searched as fast: no table. */
#define HINT_FROM 64

static size_t hint_index(const rp_rangeset *s, uint64_t start)
{
    /* Fibonacci hashing: the top bits of the product depend on every bit of
     * an aligned address. */
    return (size_t)((start * 0x9e3779b97f4a7c15ULL) >> (64 - s->hintbits));
}

/* Remember that start is at slot p.  The table has one entry or more per
 * range (two when made): larger, it would hold more, but the look-ups of a
 * replay are scattered over it and each would rather wait for a line in
 * a table the caches keep.  A larger one starts empty. */
static void hint_put(rp_rangeset *s, uint64_t start, uint32_t p)
{
    if (s->len < HINT_FROM && !s->hint)
        return;
    if (!s->hint || ((size_t)1 << s->hintbits) < s->len) {
        unsigned bits = 8;
        while (((size_t)1 << bits) < s->len * 2)
            bits++;
        free(s->hint);
        s->hint = rp_xmalloc(((size_t)1 << bits) * sizeof *s->hint);
        memset(s->hint, 0xff, ((size_t)1 << bits) * sizeof *s->hint);   /* RP_NIL */
        s->hintbits = bits;
    }
    s->hint[hint_index(s, start)] = p;
}

static uint32_t upper(const rp_rangeset *s, uint32_t k, uint64_t key);

/* Where start was last seen, if a range still starts there: chunk *k,
 * entry *i.  Entries move within their chunk when others come and go
 * there: a start no longer at its entry but still between the chunk's
 * first and last is looked for in that chunk alone. */
static int hint_get(rp_rangeset *s, uint64_t start, uint32_t *k, uint32_t *i)
{
    if (!s->hint)
        return 0;
    uint32_t *h = &s->hint[hint_index(s, start)], p = *h;
    if (p == RP_NIL || p / CHUNK >= s->nchunks)
        return 0;
    uint32_t c = s->count[p / CHUNK];
    /* Entries past a chunk's count keep old starts: the count decides.  The
     * range's own start, not the copy kept for searches: the caller reads
     * that line next anyway. */
    if (p % CHUNK < c && s->slot[p].start == start) {
        *k = p / CHUNK;
        *i = p % CHUNK;
        return 1;
    }
    const uint64_t *key = &s->key[p / CHUNK * CHUNK];
    if (!c || start < key[0] || start > key[c - 1])
        return 0;
    uint32_t n = upper(s, p / CHUNK, start);
    if (key[n - 1] != start)
        return 0;
    *h = p / CHUNK * CHUNK + n - 1;
    *k = p / CHUNK;
    *i = n - 1;
    return 1;
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
    rp_rangeset_pos pos;
    return rp_rangeset_before_pos(s, key, key, &pos);
}

rp_range *rp_rangeset_before_pos(rp_rangeset *s, uint64_t key, uint64_t near, rp_rangeset_pos *pos)
{
    if (!s->nord) {
        *pos = (rp_rangeset_pos){RP_NIL, 0};
        return NULL;
    }
    uint32_t k, i;
    if (near <= key && hint_get(s, near, &k, &i)) {
        /* A range starts at near: the one wanted is it or one after it in
         * its chunk, if a start above key follows in the chunk.  (Starts
         * alone decide, as in the search: the answer is the same even
         * where a caller has let ranges overlap.) */
        const rp_range *r = &s->slot[(size_t)k * CHUNK];
        uint32_t c = s->count[k];
        while (i + 1 < c && r[i + 1].start <= key)
            i++;
        if (i + 1 < c) {
            *pos = (rp_rangeset_pos){k, i + 1};
            return &s->slot[(size_t)k * CHUNK + i];
        }
    }
    /* chunk_at gives entry 0 when every chunk starts above key: upper then
     * counts nothing, and the new range goes first. */
    k = s->order[chunk_at(s, key)];
    uint32_t n = upper(s, k, key);
    *pos = (rp_rangeset_pos){k, n};
    if (!n)
        return NULL;
    if (s->key[(size_t)k * CHUNK + n - 1] == near)
        hint_put(s, near, k * CHUNK + n - 1);
    return &s->slot[(size_t)k * CHUNK + n - 1];
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
    hint_put(s, x->start, k * CHUNK + i);
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
    hint_put(s, x->start, k * CHUNK);
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

/* The index entry of chunk k (in use): the one whose first start is its. */
static uint32_t entry_of(const rp_rangeset *s, uint32_t k)
{
    return chunk_at(s, s->key[(size_t)k * CHUNK]);
}

/* A chunk at index entry at, a quarter full, joins its next neighbour when
 * both fit one. */
static void maybe_merge(rp_rangeset *s, uint32_t at)
{
    uint32_t k = s->order[at];
    if (s->count[k] >= CHUNK / 4 || at + 1 >= s->nord)
        return;
    uint32_t n = s->order[at + 1];
    if (s->count[k] + s->count[n] > CHUNK)
        return;
    rp_range *r = &s->slot[(size_t)k * CHUNK];
    uint64_t *key = &s->key[(size_t)k * CHUNK];
    memcpy(r + s->count[k], &s->slot[(size_t)n * CHUNK], s->count[n] * sizeof *r);
    memcpy(key + s->count[k], &s->key[(size_t)n * CHUNK], s->count[n] * sizeof *key);
    s->count[k] = (uint16_t)(s->count[k] + s->count[n]);
    s->count[n] = 0;
    index_remove(s, at + 1);
}

typedef struct put_walk {
    int (*stop)(const rp_range *r, void *arg);
    void (*gone)(const rp_range *r, void *arg);
    void *arg;
    const rp_range *hit;
} put_walk;

static int put_stop(rp_range *r, void *arg)
{
    put_walk *w = arg;
    if (!w->stop(r, w->arg))
        return 0;
    w->hit = r;
    return 1;
}

static int put_gone(rp_range *r, void *arg)
{
    put_walk *w = arg;
    w->gone(r, w->arg);
    return 0;
}

/* rp_rangeset_put when the ranges in the way reach over a chunk's start:
 * the general way, a search per range. */
static int put_across(rp_rangeset *s, const rp_range *x, put_walk *w, rp_range *clash)
{
    if (w->stop && rp_rangeset_walk_range(s, x->start, x->end, put_stop, w)) {
        *clash = *w->hit;
        return 0;
    }
    if (w->gone)
        rp_rangeset_walk_range(s, x->start, x->end, put_gone, w);
    const rp_range *r;
    while ((r = at_or_before(s, x->end - 1)) && r->end > x->start)
        rp_rangeset_erase(s, r->start, NULL);
    rp_rangeset_insert(s, x->start, x->end, x->val, x->aux);
    return 1;
}

int rp_rangeset_put(rp_rangeset *s, const rp_rangeset_pos *pos, uint64_t start, uint64_t end, uint64_t val,
                    uint64_t aux, int (*stop)(const rp_range *r, void *arg),
                    void (*gone)(const rp_range *r, void *arg), void *arg, rp_range *clash)
{
    rp_range x = {start, end, val, aux};
    if (pos->k == RP_NIL) {
        first_range(s, &x);
        return 1;
    }
    uint32_t k = pos->k, n = pos->n, j = n, at = RP_NIL;
    rp_range *r = &s->slot[(size_t)k * CHUNK];
    /* Disjoint ranges sorted by start end in order too: those in the way are
     * the last ones up to the key, a run ending at n. */
    while (j && r[j - 1].end > start)
        j--;
    if (j == 0 && n) {
        /* The run may go on at the end of the chunk before. */
        at = entry_of(s, k);
        if (at) {
            uint32_t p = s->order[at - 1];
            if (s->slot[(size_t)p * CHUNK + s->count[p] - 1].end > start) {
                put_walk w = {stop, gone, arg, NULL};
                return put_across(s, &x, &w, clash);
            }
        }
    }
    if (stop)
        for (uint32_t i = j; i < n; i++)
            if (stop(&r[i], arg)) {
                *clash = r[i];
                return 0;
            }
    for (uint32_t i = j; i < n; i++) {
        if (gone)
            gone(&r[i], arg);
        s->bytes -= r[i].end - r[i].start;
    }
    if (j == n) {
        if (at == RP_NIL)
            at = entry_of(s, k);
        put_at(s, at, n, &x);
        return 1;
    }
    /* x takes the place of the first in the way; the rest of them go. */
    uint32_t m = n - j;
    uint64_t *key = &s->key[(size_t)k * CHUNK];
    r[j] = x;
    key[j] = start;
    memmove(r + j + 1, r + n, (s->count[k] - n) * sizeof *r);
    memmove(key + j + 1, key + n, (s->count[k] - n) * sizeof *key);
    s->count[k] = (uint16_t)(s->count[k] - (m - 1));
    s->len -= m - 1;
    s->bytes += end - start;
    hint_put(s, start, k * CHUNK + j);
    if (j == 0 || m > 1) {
        if (at == RP_NIL)
            at = entry_of(s, k);
        s->lo[at] = r[0].start;
        maybe_merge(s, at);
    }
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
    maybe_merge(s, at);
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
