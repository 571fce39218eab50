/*
 * ptrmap.h - a hash map from 64-bit addresses to 64-bit values.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so a long replay never degrades.  Iteration order is never
 * exposed: replay output must not depend on where addresses hash.
 */
#ifndef RP_PTRMAP_H
#define RP_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

/* Key and value side by side: a probe touches one cache line. */
typedef struct rp_ptrmap_slot {
    uint64_t key;     /* RP_PTRMAP_EMPTY marks a free slot */
    uint64_t val;
} rp_ptrmap_slot;

typedef struct rp_ptrmap {
    rp_ptrmap_slot *slots;
    size_t cap;       /* power of two, 0 before the first insert */
    size_t len;       /* entries, the one below included */
    /* The key RP_PTRMAP_EMPTY itself is a valid address in a log (a forged
     * or corrupt one), so it lives here rather than in a slot. */
    int has_empty_key;
    uint64_t empty_key_val;
} rp_ptrmap;

#define RP_PTRMAP_EMPTY UINT64_MAX

/* Addresses are aligned, so their low bits carry nothing: mix them all. */
static inline size_t rp_ptrmap_slot_of(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & mask;
}


void rp_ptrmap_init(rp_ptrmap *m);
void rp_ptrmap_free(rp_ptrmap *m);
/* Deep copy: dst's buffers are reused when large enough. */
void rp_ptrmap_copy(rp_ptrmap *dst, const rp_ptrmap *src);

/* Pointer to the value of key, or NULL. */
uint64_t *rp_ptrmap_get(const rp_ptrmap *m, uint64_t key);
/* Insert or overwrite. */
void rp_ptrmap_put(rp_ptrmap *m, uint64_t key, uint64_t val);
/* Insert or overwrite; 1 and the value it replaced in *old when key was
 * there, else 0 (one probe where a get and a put take two). */
int rp_ptrmap_swap(rp_ptrmap *m, uint64_t key, uint64_t val, uint64_t *old);
/* Make room for n entries in all: puts up to there do not grow the map. */
void rp_ptrmap_reserve(rp_ptrmap *m, size_t n);
/* Many puts at once, in order (a later one of a key wins): sorted by where
 * they land first, so a map larger than the caches is written in one sweep
 * instead of a miss per put.  scratch: n entries of the caller's. */
void rp_ptrmap_put_many(rp_ptrmap *m, const rp_ptrmap_slot *kv, size_t n, rp_ptrmap_slot *scratch);
/* Remove key; returns 1 and stores its value in *val (if val) when present. */
int rp_ptrmap_del(rp_ptrmap *m, uint64_t key, uint64_t *val);

#endif
