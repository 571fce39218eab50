/*
 * block_marks.c - one bit per 16-byte-aligned address (block_marks.h).
 *
 * Three levels, each indexed by a slice of the address: a static table of
 * 2^16 entries (one per 4 GiB), a mapped table of 4096 leaves (one per
 * MiB), and a mapped leaf of 131072 bits (one per 8 bytes).  Two blocks
 * never share a bit: pymalloc's are 16-aligned (on 64-bit since 3.8), and
 * a malloc's are 8-aligned at least, 8 bytes at least (the 8-byte blocks of
 * jemalloc, tcmalloc and mimalloc under PYTHONMALLOC=malloc, which hold no
 * object and are marked: a bit per 16 bytes could mark only half of them,
 * and the rest were recorded as objects).  An address that is not aligned
 * is never marked (block_marks_set says so and the caller records the
 * block), so its test is 0 and its clear does nothing.
 */
#include "block_marks.h"
#include "host_blocks.h"

#include <stddef.h>
#include <sys/mman.h>

#define GRANULE_SHIFT BLOCK_MARKS_GRANULE_SHIFT
#define LEAF_SHIFT BLOCK_MARKS_LEAF_SHIFT   /* a leaf covers 1 MiB */
#define MID_SHIFT BLOCK_MARKS_MID_SHIFT     /* a middle table covers 4 GiB */
#define TOP_SHIFT BLOCK_MARKS_TOP_SHIFT     /* addresses below 2^48 */
#define LEAF_WORDS (1u << (LEAF_SHIFT - GRANULE_SHIFT) >> 6)   /* 1024 */
#define MID_ENTRIES (1u << (MID_SHIFT - LEAF_SHIFT))          /* 4096 */

block_marks_entry block_marks_top[1u << (TOP_SHIFT - MID_SHIFT)];

/* Zeroed pages, outside the allocators (this runs inside one), or NULL.
 * The guard keeps our own mapping out of the host-buffer hooks. */
static void *map_zeroed(size_t bytes)
{
    host_guard_enter();
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    host_guard_leave();
    return p == MAP_FAILED ? NULL : p;
}

/* What *at names, mapped and swapped in when missing (whoever loses the
 * race unmaps its copy and takes the winner's); NULL when out of memory. */
static void *get_or_make(block_marks_entry *at, size_t bytes)
{
    void *got = atomic_load_explicit(at, memory_order_acquire);
    if (got)
        return got;
    void *fresh = map_zeroed(bytes);
    if (!fresh)
        return NULL;
    if (atomic_compare_exchange_strong_explicit(at, &got, fresh, memory_order_acq_rel, memory_order_acquire))
        return fresh;
    host_guard_enter();
    munmap(fresh, bytes);
    host_guard_leave();
    return got;
}

/* The word holding the address's bit, its pages made if missing; NULL
 * when it cannot have one (not 8-aligned, above 2^48, no memory). */
static block_marks_word *word_made(uintptr_t a, uint64_t *bit)
{
    if ((a & ((1u << GRANULE_SHIFT) - 1)) || (uint64_t)a >> TOP_SHIFT)
        return NULL;
    block_marks_entry *mid = get_or_make(&block_marks_top[a >> MID_SHIFT], MID_ENTRIES * sizeof(block_marks_entry));
    block_marks_word *leaf = mid ? get_or_make(&mid[(a >> LEAF_SHIFT) & (MID_ENTRIES - 1)],
                                               LEAF_WORDS * sizeof(block_marks_word)) : NULL;
    return leaf ? block_marks_find(a, bit) : NULL;
}

int block_marks_set(const void *block)
{
    uint64_t bit = 0;
    block_marks_word *w = word_made((uintptr_t)block, &bit);
    if (!w)
        return 0;
    if (!(atomic_load_explicit(w, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
    return 1;
}
