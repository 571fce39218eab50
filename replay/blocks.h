/*
 * blocks.h - what the best-fit models share: segments cut into blocks
 * linked to their address neighbours, and ordered sets of free blocks.
 *
 * Everything lives in flat arrays linked by index, so a model's copy (for
 * explore's checkpoints) is a few memcpys.
 */
#ifndef RP_BLOCKS_H
#define RP_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "ptrmap.h"

typedef struct rp_block {
    uint64_t ptr, size, stream;
    uint32_t prev, next;       /* neighbours inside one segment, RP_NIL */
    uint8_t in_use;
    uint8_t cls;               /* the model's size class of its segment */
    uint8_t in_set;            /* listed in a free set */
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


#include "model.h"

/* Cheap check of one block: linked and adjacent to its neighbours, and, if
 * free, not next to another free block and listed in a free set. */
int rp_blocks_check(const rp_blocks *s, uint32_t id, const rp_host *h);
/* The same for every block. */
int rp_blocks_audit(const rp_blocks *s, const rp_host *h);

#endif
