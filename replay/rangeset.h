/*
 * rangeset.h - a set of disjoint address ranges [start, end).
 *
 * Used for live blocks (to catch overlap) and for segments (to find the one
 * holding a block), on every allocation and free of a replay: it must be
 * fast.  Ranges sit sorted by start in chunks of RP_RANGESET_CHUNK, the
 * chunks in address order in a small index: a look-up is two binary
 * searches over contiguous memory, an insertion or removal moves at most
 * one chunk's entries (a full chunk splits, nearly empty neighbours merge).
 * Each chunk's starts are also kept apart, 32 in four cache lines, so the
 * search within a chunk reads those and only then the one range it found.
 * Disjoint ranges sorted by start are sorted by end too, so an overlap test
 * is one predecessor search.  The contents, and so every answer, depend
 * only on the calls made, never on where addresses hash.
 *
 * A look-up near a range's start (a free of a block, the same address
 * handed out again) first tries where that start was last seen: a small
 * table by its hash holds a position in the chunks, good until entries
 * move, checked before it is believed (the start must still be there), and
 * otherwise replaced by what the search finds.  Pools free and reuse the
 * same addresses, so most look-ups take that path and read three cache
 * lines where a search reads a dozen, one after the other.
 */
#ifndef RP_RANGESET_H
#define RP_RANGESET_H

#include <stddef.h>
#include <stdint.h>

#define RP_NIL UINT32_MAX

#define RP_RANGESET_CHUNK 32

typedef struct rp_range {
    uint64_t start, end;
    uint64_t val, aux;         /* the caller's payload */
} rp_range;

typedef struct rp_rangeset {
    rp_range *slot;            /* chunk k holds slot[k * CHUNK ..], count[k] of them, sorted */
    uint64_t *key;             /* key[i] == slot[i].start: what the search reads */
    uint16_t *count;
    uint32_t nchunks, capchunks;   /* chunks allocated */
    uint32_t *order;           /* chunks in use, in address order */
    uint64_t *lo;              /* the first start of each, for the search */
    uint32_t nord, capord;
    uint32_t *spare;           /* chunks free for reuse */
    uint32_t nspare, capspare;
    size_t len;
    uint64_t bytes;            /* sum of lengths */
    uint32_t *hint;            /* by hash of a start: its slot (chunk * CHUNK + entry), or RP_NIL */
    unsigned hintbits;         /* the table has 1 << hintbits entries (none yet: 0) */
} rp_rangeset;

void rp_rangeset_init(rp_rangeset *s);
void rp_rangeset_free(rp_rangeset *s);
void rp_rangeset_copy(rp_rangeset *dst, const rp_rangeset *src);

/* The range intersecting [start, end), or NULL (the lowest such one is not
 * promised: any witness will do for a report). */
const rp_range *rp_rangeset_overlap(const rp_rangeset *s, uint64_t start, uint64_t end);
/* The range holding addr, or NULL. */
const rp_range *rp_rangeset_find(const rp_rangeset *s, uint64_t addr);
/* The range with the largest start at or below key, or NULL; its payload
 * may be changed in place (its bounds through rp_rangeset_set_end only). */
rp_range *rp_rangeset_before(rp_rangeset *s, uint64_t key);
/* Move the end of r (from rp_rangeset_before): the caller knows no range
 * starts in [r->start, end) but r. */
void rp_rangeset_set_end(rp_rangeset *s, rp_range *r, uint64_t end);
/* Where a look-up ended, for rp_rangeset_put: valid until the set changes. */
typedef struct rp_rangeset_pos {
    uint32_t k;                /* the chunk searched (RP_NIL: the set was empty) */
    uint32_t n;                /* its ranges starting at or below the key */
} rp_rangeset_pos;

/* rp_rangeset_before(s, key) that also says where it looked.  near: where
 * the range wanted likely starts (a block's own address when key is its
 * last byte): a range seen lately starting there is tried first. */
rp_range *rp_rangeset_before_pos(rp_rangeset *s, uint64_t key, uint64_t near, rp_rangeset_pos *pos);
/* Put [start, end) (start < end) in place of the ranges intersecting it,
 * with no search of its own: pos is what rp_rangeset_before_pos(s, end - 1,
 * ...) said, the set unchanged since.  First, when stop is given, the ranges in
 * the way are shown to it in address order; at the first for which it
 * returns nonzero nothing changes, that range is copied to *clash and 0 is
 * returned.  Otherwise each is shown to gone (when given), in address
 * order, and leaves; then [start, end) is in and 1 is returned.  Nearly
 * always the ranges in the way, if any, sit in the chunk the search ended
 * in, and the new range takes the place of the first of them there: one
 * move within the chunk, where an erase and an insert cost a search each. */
int rp_rangeset_put(rp_rangeset *s, const rp_rangeset_pos *pos, uint64_t start, uint64_t end, uint64_t val,
                    uint64_t aux, int (*stop)(const rp_range *r, void *arg),
                    void (*gone)(const rp_range *r, void *arg), void *arg, rp_range *clash);
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
/* The same for the ranges intersecting [start, end) only; fn may change
 * their payload. */
int rp_rangeset_walk_range(rp_rangeset *s, uint64_t start, uint64_t end, int (*fn)(rp_range *r, void *arg),
                           void *arg);

#endif
