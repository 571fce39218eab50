/*
 * rankset.h - a set of addresses ordered by when each was last added, where
 * an address is named by its rank (1: the newest).
 *
 * A column block (FORMAT.md section 15) writes a pointer as its rank in such
 * a set: the blocks live in a space, or freed and not yet reused, in the
 * frame so far.  The encoder and every decoder keep the same sets, so the
 * set's rules are the format's: it holds the last TF_RANK_WINDOW additions
 * at most (an addition pushes out whatever was added TF_RANK_WINDOW additions
 * before, if it is still there), and adding an address it holds moves it to
 * the front.  The bound is what keeps the recorder's memory for this fixed
 * (a set is about 90 KiB, whatever the frame holds), and costs nothing to a
 * pool stream, whose frees name recent blocks.
 *
 * Slots are a ring indexed by the addition's number modulo the window; a
 * bitmap says which slots are in use, so a rank is the count of used slots
 * from the address's to the newest, and the address of a rank is found by
 * counting back from the newest: both a few popcounts for the recent
 * addresses a pool stream names.  An open-addressing hash (linear probing,
 * deletion by backward shift) finds an address's slot, each slot in use
 * knows where the hash names it (a removal probes nothing), and the slot last
 * found or named is remembered: a coder asks about the same address several
 * times in a row (its rank, its size, then removes it).  No allocation: the
 * caller owns the memory (the recorder maps it, see columns.h).
 */
#ifndef TF_RANKSET_H
#define TF_RANKSET_H

#include <stdint.h>

#define TF_RANK_WINDOW 4096u  /* a power of two: part of the format */

typedef struct tf_rankset {
    uint64_t added;                        /* additions so far */
    uint32_t count;                        /* addresses held */
    uint64_t key[TF_RANK_WINDOW];          /* by slot */
    uint64_t val[TF_RANK_WINDOW];          /* what the caller keeps with it (a size) */
    uint64_t used[TF_RANK_WINDOW / 64];    /* slots in use */
    uint16_t hash[2 * TF_RANK_WINDOW];     /* slot + 1, 0 empty */
    uint16_t pos[TF_RANK_WINDOW];          /* by slot in use: where the hash names it */
    uint32_t memo;                         /* the slot last found (checked before use) */
} tf_rankset;

void tf_rankset_clear(tf_rankset *s);
/* Adds addr (moving it to the front if held) with val. */
void tf_rankset_add(tf_rankset *s, uint64_t addr, uint64_t val);
/* addr's rank (1 the newest), 0 when not held. */
uint32_t tf_rankset_rank(tf_rankset *s, uint64_t addr);
/* The address of rank r; 0 when r is 0 or above the count. */
uint64_t tf_rankset_at(tf_rankset *s, uint32_t r);

/* The lookups and removals below, out of line (rankset.c), and a slot's
 * removal; not for callers. */
int tf_rankset_remove_(tf_rankset *s, uint64_t addr, uint64_t *val);
int tf_rankset_get_(tf_rankset *s, uint64_t addr, uint64_t *val);
void tf_rankset_drop_(tf_rankset *s, uint32_t slot);

/* The remembered slot when it holds addr, else -1.  A coder removes or
 * looks up the address it has just ranked or found by its rank, whose
 * slot is the one remembered: checked inline, that spares a call (the
 * column coder's removals and sizes, about one per event each way). */
static inline int tf_rankset_memo_(const tf_rankset *s, uint64_t addr)
{
    uint32_t m = s->memo % TF_RANK_WINDOW;
    return s->key[m] == addr && (s->used[m / 64] >> (m % 64) & 1) ? (int)m : -1;
}

/* Removes addr; 1 and its val in *val when it was held, else 0. */
static inline int tf_rankset_remove(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int m = tf_rankset_memo_(s, addr);
    if (m < 0)
        return tf_rankset_remove_(s, addr, val);
    if (val)
        *val = s->val[m];
    tf_rankset_drop_(s, (uint32_t)m);
    return 1;
}

/* 1 and addr's val in *val when held. */
static inline int tf_rankset_get(tf_rankset *s, uint64_t addr, uint64_t *val)
{
    int m = tf_rankset_memo_(s, addr);
    if (m < 0)
        return tf_rankset_get_(s, addr, val);
    *val = s->val[m];
    return 1;
}

/* Ranks are counted with the CPU's POPCNT instruction where it has one,
 * and bits selected with BMI2's PDEP where it runs fast (x86-64 asked at
 * run time); 1 forces the portable count and select, 2 the table select
 * (POPCNT where there is one), which give the same ranks (for the tests,
 * which check each). */
void tf_rankset_portable(int on);

#endif
