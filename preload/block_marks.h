/*
 * block_marks.h - one bit per 8-byte-aligned address: the object blocks
 * whose allocation TRACE_PY_ALLOCS left out and whose free cannot tell so.
 *
 * A collection's frees are recorded (py_free) and matched, by address, to
 * the latest py_alloc there (python_alloc.c).  A block whose allocation was
 * left out must have its free left out too, or the free would be charged to
 * whatever recorded object had the address before.  A str, int, float or
 * bytes says what it is at its free (its type word); a dict key table does
 * not (its first words at the free look like a GC header's: docs/python.md).
 * So the wrapper marks the address of each block it leaves out for not
 * being an object (python_alloc_sites.c), forgets the mark when it records
 * an allocation at that address, and a free inside a collection with the
 * mark set is left out.
 *
 * The bits are exact, never approximate: a mark that cannot be made (an
 * address not 8-aligned or above 2^48, no memory for its page of bits)
 * makes the caller record the block instead, so a free is left out only for
 * a block whose allocation was.  Lock-free (an interpreter with its own GIL
 * may run beside another): pages of bits are mapped on first use, put in
 * place with a compare-and-swap, and kept for the process's life (16 KiB per
 * MiB of heap that held a marked block).  Inherited across fork as they
 * are, like the heap they describe.
 */
#ifndef TRACE_BLOCK_MARKS_H
#define TRACE_BLOCK_MARKS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Marks the block's address: 1, or 0 when it cannot be marked. */
int block_marks_set(const void *block);

/* The bits: a table per 4 GiB of addresses below 2^48, a leaf of 131072
 * bits per MiB in it (block_marks.c).  Clear and test are inline: every
 * recorded allocation clears. */
#define BLOCK_MARKS_GRANULE_SHIFT 3
#define BLOCK_MARKS_LEAF_SHIFT 20
#define BLOCK_MARKS_MID_SHIFT 32
#define BLOCK_MARKS_TOP_SHIFT 48
typedef _Atomic(uint64_t) block_marks_word;
typedef _Atomic(void *) block_marks_entry;
extern block_marks_entry block_marks_top[1u << (BLOCK_MARKS_TOP_SHIFT - BLOCK_MARKS_MID_SHIFT)];

/* The word holding the address's bit, or NULL when no bit of its MiB was
 * ever set (or it cannot have one: not 8-aligned, or above 2^48). */
static inline block_marks_word *block_marks_find(uintptr_t a, uint64_t *bit)
{
    /* Not 8-aligned, or above 2^48: one test of a mask (written as two
     * tests, GCC made them an and, a shift, an or and two moves: 3
     * instructions more a recorded allocation). */
    if (__builtin_expect(((uint64_t)a & ((~0ull << BLOCK_MARKS_TOP_SHIFT) | ((1u << BLOCK_MARKS_GRANULE_SHIFT) - 1))) != 0, 0))
        return NULL;
    block_marks_entry *mid = atomic_load_explicit(&block_marks_top[a >> BLOCK_MARKS_MID_SHIFT], memory_order_acquire);
    if (!mid)
        return NULL;
    block_marks_word *leaf = atomic_load_explicit(
        &mid[(a >> BLOCK_MARKS_LEAF_SHIFT) & ((1u << (BLOCK_MARKS_MID_SHIFT - BLOCK_MARKS_LEAF_SHIFT)) - 1)],
        memory_order_acquire);
    if (!leaf)
        return NULL;
    uint32_t granule = (uint32_t)(a >> BLOCK_MARKS_GRANULE_SHIFT) &
                       ((1u << (BLOCK_MARKS_LEAF_SHIFT - BLOCK_MARKS_GRANULE_SHIFT)) - 1);
    *bit = 1ull << (granule & 63);
    return &leaf[granule >> 6];
}

/* Clears the mark of the block's address, if any.  Most recorded
 * allocations land where nothing was marked: a load, no locked
 * instruction. */
static inline void block_marks_clear(const void *block)
{
    uint64_t bit = 0;
    block_marks_word *w = block_marks_find((uintptr_t)block, &bit);
    if (w && atomic_load_explicit(w, memory_order_relaxed) & bit)
        atomic_fetch_and_explicit(w, ~bit, memory_order_relaxed);
}

/* 1 when the block's address is marked. */
static inline int block_marks_test(const void *block)
{
    uint64_t bit = 0;
    block_marks_word *w = block_marks_find((uintptr_t)block, &bit);
    return w && (atomic_load_explicit(w, memory_order_relaxed) & bit) != 0;
}

#endif
