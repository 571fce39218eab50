/*
 * checks.h - the model-free checks, run on every log.
 *
 * Address bookkeeping per space (CUDA device memory, pinned host memory,
 * virtual-memory handles and reservations, large host buffers, and each
 * pool's blocks and segments): overlapping live blocks, double free, free of
 * a pointer never handed out, a pool block outside every segment of its pool,
 * a segment released with blocks in it.  Warnings (not violations): failed
 * allocations, with the state at that moment, and what is still live at a
 * clean end (a leak report, since a process may exit holding memory).
 */
#ifndef RP_CHECKS_H
#define RP_CHECKS_H

#include <stdint.h>

#include "finding.h"
#include "trace_format.h"

typedef struct rp_checks rp_checks;

/* Per-pool figures kept by the checks from the log alone. */
typedef struct rp_pool_figures {
    uint64_t reserved, allocated;       /* live segment bytes, live block bytes */
    uint64_t peak_reserved, peak_allocated;
    uint64_t segments;                  /* live segments */
    uint64_t blocks;
} rp_pool_figures;

rp_checks *rp_checks_new(void);
void rp_checks_free(rp_checks *c);

/* The kinds of event the checks look at: memory handed out and given
 * back, segments, failed releases.  The rest (operation and collection
 * bounds, most of a log) need no call: rp_checks_event ignores them. */
#define RP_CHECKS_KINDS                                                                                        \
    (1ULL << TF_EV_CUDA_ALLOC | 1ULL << TF_EV_CUDA_FREE | 1ULL << TF_EV_POOL_ALLOC | 1ULL << TF_EV_POOL_FREE |   \
     1ULL << TF_EV_POOL_SEGMENT | 1ULL << TF_EV_HOST_ALLOC | 1ULL << TF_EV_HOST_FREE |                         \
     1ULL << TF_EV_RELEASE_FAILED)

static inline int rp_checks_wants(const tf_event *e)
{
    return e->kind < 64 && (RP_CHECKS_KINDS >> e->kind & 1);
}

/* Feed one event.  owner_pool: the pool of the operation this event is a
 * direct child of (a cudaMalloc inside a pool operation is that pool's
 * segment), 0 if none.  Returns 1 and fills *v on a violation. */
int rp_checks_event(rp_checks *c, const tf_event *e, uint32_t owner_pool, rp_finding *v);

/* A pool whose blocks hold their segment by reference (CuPy's: a chunk
 * keeps its segment's Memory object alive): a device free of a segment with
 * blocks in it still live means those blocks were freed unseen (CuPy frees a
 * chunk without its pool, and without the hook, once the MemoryPool object
 * is gone: a pool dropped while its arrays live), not a pool that gave back
 * memory in use.  Those blocks go (GONE) with a warning unseen_free, not
 * the violation segment_in_use. */
void rp_checks_pool_holds_by_reference(rp_checks *c, uint32_t pool);
/* The starts of the pool blocks the last event freed unseen (above);
 * valid until the next event. */
size_t rp_checks_unseen(const rp_checks *c, const uint64_t **starts);

/* Events are missing before the next one (segments deleted to keep a log
 * within its budget, FORMAT.md section 13; a follower that fell behind):
 * forget what is live, since the missing part freed and reused memory, and
 * check on with partial history.  A free of an address never seen is then
 * no finding (it may be a block from before), nor a pool block outside the
 * segments seen; double frees, overlaps and the rest hold for what is seen
 * from here on.  Warnings and peaks are kept. */
void rp_checks_forget(rp_checks *c);

/* Checkpoints (state.h): everything the checks know, and back into
 * checks fresh from rp_checks_new.  load: 0, or -1 when the bytes do not
 * read (the checks are then only fit for rp_checks_free). */
struct rp_state_w;
struct rp_state_r;
void rp_checks_save(const rp_checks *c, struct rp_state_w *w);
int rp_checks_load(rp_checks *c, struct rp_state_r *r);
/* Every stack id through m (a state that goes into another log, whose
 * stacks are numbered afresh; NULL: forgotten, findings then show no
 * stack, never a wrong one). */
void rp_checks_map_stacks(rp_checks *c, const rp_stack_map *m);

/* A warning found elsewhere (a model), listed with the checks' own. */
void rp_checks_add_warning(rp_checks *c, const rp_finding *w);

/* The log ended cleanly: record what is still live as warnings. */
void rp_checks_end(rp_checks *c);

/* Warnings in the order found: the first RP_CHECKS_MAX_WARNINGS are kept
 * in *list; returns how many are kept, *total says how many there were. */
#define RP_CHECKS_MAX_WARNINGS 32
uint32_t rp_checks_warnings(const rp_checks *c, const rp_finding **list, uint64_t *total);

/* Figures for one pool (zeros for an unknown one), and the device totals. */
rp_pool_figures rp_checks_pool(const rp_checks *c, uint32_t pool);
uint64_t rp_checks_device_live(const rp_checks *c);
/* The starts of the device blocks the last teardown event (a cuda_free of
 * space context) took; valid until the next event. */
size_t rp_checks_gone(const rp_checks *c, const uint64_t **starts);

#endif
