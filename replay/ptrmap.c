/* ptrmap.c - open addressing, linear probing, backward-shift deletion. */
#include "ptrmap.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define slot_of rp_ptrmap_slot_of

void rp_ptrmap_init(rp_ptrmap *m)
{
    memset(m, 0, sizeof *m);
}

void rp_ptrmap_free(rp_ptrmap *m)
{
    free(m->slots);
    rp_ptrmap_init(m);
}

void rp_ptrmap_copy(rp_ptrmap *dst, const rp_ptrmap *src)
{
    if (dst->cap != src->cap) {
        free(dst->slots);
        dst->slots = src->cap ? rp_xmalloc(src->cap * sizeof *dst->slots) : NULL;
        dst->cap = src->cap;
    }
    if (src->cap)
        memcpy(dst->slots, src->slots, src->cap * sizeof *dst->slots);
    dst->len = src->len;
    dst->has_empty_key = src->has_empty_key;
    dst->empty_key_val = src->empty_key_val;
}

uint64_t *rp_ptrmap_get(const rp_ptrmap *m, uint64_t key)
{
    if (key == RP_PTRMAP_EMPTY)  /* the value is the caller's to change */
        return m->has_empty_key ? (uint64_t *)&m->empty_key_val : NULL;
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
        if (m->slots[i].key == key)
            return &m->slots[i].val;
        if (m->slots[i].key == RP_PTRMAP_EMPTY)
            return NULL;
    }
}

static void grow_to(rp_ptrmap *m, size_t ncap)
{
    rp_ptrmap_slot *old = m->slots;
    size_t ocap = m->cap;
    m->slots = rp_xmalloc(ncap * sizeof *m->slots);
    memset(m->slots, 0xff, ncap * sizeof *m->slots);
    m->cap = ncap;
    m->len = m->has_empty_key;  /* re-counted below, slot by slot */
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key != RP_PTRMAP_EMPTY)
            rp_ptrmap_put(m, old[i].key, old[i].val);
    free(old);
}

static void grow(rp_ptrmap *m)
{
    grow_to(m, m->cap ? m->cap * 2 : 64);
}

void rp_ptrmap_reserve(rp_ptrmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 64;
    while ((n + 1) * 2 > cap)
        cap *= 2;
    if (cap != m->cap)
        grow_to(m, cap);
}

void rp_ptrmap_put_many(rp_ptrmap *m, const rp_ptrmap_slot *kv, size_t n, rp_ptrmap_slot *scratch)
{
    if (!n)
        return;
    rp_ptrmap_reserve(m, m->len + n);
    /* A stable counting sort by the top bits of the home slot: the puts then
     * sweep the table once, in order, and a key's later put still wins.
     * A large batch gets buckets of a few lines, so that the sweep goes
     * forward line by line; a small one is not worth clearing many. */
    enum { MAX_BUCKETS = 4096 };
    size_t buckets = n > 4 * MAX_BUCKETS ? MAX_BUCKETS : 256;
    size_t count[MAX_BUCKETS + 1], mask = m->cap - 1;
    memset(count, 0, (buckets + 1) * sizeof *count);
    int shift = 0;
    while ((mask >> shift) >= buckets)
        shift++;
    for (size_t i = 0; i < n; i++)
        count[(slot_of(kv[i].key, mask) >> shift) + 1]++;
    for (size_t b = 0; b < buckets; b++)
        count[b + 1] += count[b];
    for (size_t i = 0; i < n; i++)
        scratch[count[slot_of(kv[i].key, mask) >> shift]++] = kv[i];
    /* Each put is a miss in a map larger than the caches: ask for the slot
     * of a put some way ahead, so that many misses are under way at once
     * rather than one after another. */
    enum { AHEAD = 16 };
    for (size_t i = 0; i < n; i++) {
        if (i + AHEAD < n)
            __builtin_prefetch(&m->slots[slot_of(scratch[i + AHEAD].key, mask)], 1);
        rp_ptrmap_put(m, scratch[i].key, scratch[i].val);
    }
}

int rp_ptrmap_swap(rp_ptrmap *m, uint64_t key, uint64_t val, uint64_t *old)
{
    if (key == RP_PTRMAP_EMPTY) {
        int had = m->has_empty_key;
        if (had)
            *old = m->empty_key_val;
        m->len += !had;
        m->has_empty_key = 1;
        m->empty_key_val = val;
        return had;
    }
    /* Keep the load under 1/2: probes stay short and cache-local. */
    if ((m->len + 1) * 2 > m->cap)
        grow(m);
    size_t mask = m->cap - 1;
    size_t i = slot_of(key, mask);
    while (m->slots[i].key != RP_PTRMAP_EMPTY && m->slots[i].key != key)
        i = (i + 1) & mask;
    int had = m->slots[i].key == key;
    if (had)
        *old = m->slots[i].val;
    else
        m->len++;
    m->slots[i].key = key;
    m->slots[i].val = val;
    return had;
}

void rp_ptrmap_put(rp_ptrmap *m, uint64_t key, uint64_t val)
{
    uint64_t old;
    rp_ptrmap_swap(m, key, val, &old);
}

int rp_ptrmap_del(rp_ptrmap *m, uint64_t key, uint64_t *val)
{
    if (key == RP_PTRMAP_EMPTY) {
        if (!m->has_empty_key)
            return 0;
        if (val)
            *val = m->empty_key_val;
        m->has_empty_key = 0;
        m->len--;
        return 1;
    }
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    size_t i = slot_of(key, mask);
    while (m->slots[i].key != key) {
        if (m->slots[i].key == RP_PTRMAP_EMPTY)
            return 0;
        i = (i + 1) & mask;
    }
    if (val)
        *val = m->slots[i].val;
    /* Backward shift: pull later entries of the probe run into the hole so
     * lookups never meet a gap before their key. */
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        if (m->slots[j].key == RP_PTRMAP_EMPTY)
            break;
        size_t home = slot_of(m->slots[j].key, mask);
        /* j's entry may move to i only if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = RP_PTRMAP_EMPTY;
    m->len--;
    return 1;
}
