/*
 * blocks.h - what the best-fit models share: segments cut into blocks
 * linked to their address neighbours, ordered sets of free blocks, freeing
 * with coalescing, releasing a segment, and the checks of what the last
 * operations touched.
 *
 * Everything lives in flat arrays linked by index, so a model's copy (for
 * explore's checkpoints) is a few memcpys.
 */
#ifndef RP_BLOCKS_H
#define RP_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "ptrmap.h"

typedef struct rp_block {
    uint64_t ptr, size, stream;
    uint32_t prev, next;       /* neighbours inside one segment, RP_NIL */
    uint8_t in_use;
    uint8_t cls;               /* the model's size class of its segment */
    uint8_t in_set;            /* listed in a free set */
    uint8_t unmapped;          /* address space without memory behind it
                                * (torch's expandable segments): never
                                * merged with a free block */
    uint8_t expandable;        /* part of an expandable segment */
} rp_block;

typedef struct rp_blocks {
    rp_block *b;
    size_t n, cap;
    uint32_t freeids;          /* recycled ids, linked through next */
    rp_ptrmap by_ptr;          /* block start -> id */
} rp_blocks;

void rp_blocks_init(rp_blocks *s);
void rp_blocks_free(rp_blocks *s);
void rp_blocks_copy(rp_blocks *dst, const rp_blocks *src);
uint32_t rp_blocks_new(rp_blocks *s, uint64_t ptr, uint64_t size, uint64_t stream, uint8_t cls);
void rp_blocks_delete(rp_blocks *s, uint32_t id);
/* The block starting at ptr, or RP_NIL. */
uint32_t rp_blocks_at(const rp_blocks *s, uint64_t ptr);
/* Cut id at size bytes; the new block (the rest) is returned. */
uint32_t rp_blocks_split(rp_blocks *s, uint32_t id, uint64_t size);
/* Absorb right into its left neighbour left. */
void rp_blocks_merge(rp_blocks *s, uint32_t left, uint32_t right);
/* Is id a live block (not a recycled id)? */
int rp_blocks_live(const rp_blocks *s, uint32_t id);

/* An ordered set of (a, b, c) keys: free blocks by (stream, size, address)
 * or (size, address).  A sorted vector: free lists are short, and a vector
 * copies in one memcpy. */
typedef struct rp_key { uint64_t a, b, c; } rp_key;
typedef struct rp_ordset { rp_key *k; size_t n, cap; } rp_ordset;

void rp_ordset_free(rp_ordset *s);
void rp_ordset_copy(rp_ordset *dst, const rp_ordset *src);
/* Position of the first key >= k. */
size_t rp_ordset_lower(const rp_ordset *s, rp_key k);
void rp_ordset_insert(rp_ordset *s, rp_key k);
/* 1 when k was present and is now gone. */
int rp_ordset_erase(rp_ordset *s, rp_key k);
/* 1 when keys are strictly increasing (the audit). */
int rp_ordset_sorted(const rp_ordset *s);

/* Checkpoints (state.h).  A model saves its struct as it is and then its
 * containers with these; loading, it reads the struct back, unhooks every
 * container in it (the pointers read are another process's) so that a
 * short read leaves something destroy can take, and loads each. */
struct rp_state_w;
struct rp_state_r;
void rp_blocks_save(const rp_blocks *s, struct rp_state_w *w);
void rp_blocks_unhook(rp_blocks *s);
void rp_blocks_load(rp_blocks *s, struct rp_state_r *r);
void rp_ordset_save(const rp_ordset *s, struct rp_state_w *w);
void rp_ordset_unhook(rp_ordset *s);
void rp_ordset_load(rp_ordset *s, struct rp_state_r *r);

/* Cheap check of one block: linked and adjacent to its neighbours, and, if
 * free, not next to another free block and listed in a free set. */
int rp_blocks_check(const rp_blocks *s, uint32_t id, const rp_host *h);

/* The blocks the operations since the last check touched: the next check
 * looks at them alone, or at every block once more were touched than kept. */
#define RP_TOUCHED_MAX 8
typedef struct rp_touched { uint32_t id[RP_TOUCHED_MAX]; int n; } rp_touched;

void rp_touched_add(rp_touched *t, uint32_t id);

/* A model's own checks, beside rp_blocks_check: its free sets as a whole
 * (in an audit), and one block (either may be NULL). */
typedef struct rp_fit_checks {
    int (*sets)(const void *model, const rp_host *h);
    int (*block)(const rp_block *b, const rp_host *h);
} rp_fit_checks;

/* The check of a best-fit model: the blocks touched since the last check,
 * or, when full or when more were touched than kept, the free sets and every
 * block.  The touched blocks are forgotten whatever is found. */
int rp_blocks_check_touched(const rp_blocks *s, rp_touched *t, int full, const rp_fit_checks *own,
                            const void *model, const rp_host *h);

/* How a model takes a free block out of its free set. */
typedef void rp_unlist_fn(void *model, uint32_t id);

/* Mark id free and merge it with its free (mapped) neighbours, each
 * unlisted first: the block that remains, for the model to list. */
uint32_t rp_blocks_coalesce(rp_blocks *s, uint32_t id, rp_unlist_fn *unlist, void *model);
/* The device took back the segment at base: unlist and delete it, and count
 * it gone.  RP_UNKNOWN when the model does not hold it whole and free (it
 * diverged; the model-free checks judge the real release). */
int rp_blocks_release(rp_blocks *s, uint64_t base, rp_model_counts *c, rp_unlist_fn *unlist, void *model);

#endif
