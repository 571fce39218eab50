/*
 * rangeset.h - a set of disjoint address ranges [start, end).
 *
 * Used for live blocks (to catch overlap) and for segments (to find the one
 * holding a block).  A treap whose priorities are a hash of the start address:
 * O(log n) per operation and a shape that depends only on the contents, never
 * on timing or allocation addresses.  Nodes live in one array and link by
 * index, so a copy is a memcpy (explore's checkpoints).
 */
#ifndef RP_RANGESET_H
#define RP_RANGESET_H

#include <stddef.h>
#include <stdint.h>

#define RP_NIL UINT32_MAX

typedef struct rp_range {
    uint64_t start, end;
    uint64_t val, aux;         /* the caller's payload */
    uint32_t left, right, prio;
} rp_range;

typedef struct rp_rangeset {
    rp_range *n;               /* node 0 unused, so RP_NIL and 0 never alias */
    size_t cap, used;
    uint32_t root, freelist;
    size_t len;
    uint64_t bytes;            /* sum of lengths */
} rp_rangeset;

void rp_rangeset_init(rp_rangeset *s);
void rp_rangeset_free(rp_rangeset *s);
void rp_rangeset_copy(rp_rangeset *dst, const rp_rangeset *src);

/* The range intersecting [start, end), or NULL (the lowest such one is not
 * promised: any witness will do for a report). */
const rp_range *rp_rangeset_overlap(const rp_rangeset *s, uint64_t start, uint64_t end);
/* The range holding addr, or NULL. */
const rp_range *rp_rangeset_find(const rp_rangeset *s, uint64_t addr);
/* Insert [start, end) (the caller has checked for overlap). */
void rp_rangeset_insert(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux);
/* Insert [start, end) unless it overlaps a range already there: then
 * nothing changes and that range is returned (a copy in *clash).  One
 * descent: the neighbours are found on the way down. */
int rp_rangeset_insert_new(rp_rangeset *s, uint64_t start, uint64_t end, uint64_t val, uint64_t aux, rp_range *clash);
/* Remove the range starting at start; 1 and a copy in *out if present. */
int rp_rangeset_erase(rp_rangeset *s, uint64_t start, rp_range *out);
/* Visit ranges in address order (deterministic); stop when fn returns nonzero. */
int rp_rangeset_walk(const rp_rangeset *s, int (*fn)(const rp_range *r, void *arg), void *arg);

#endif
