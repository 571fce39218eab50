/*
 * host_blocks.h - large host blocks: the set of live ones and their events.
 *
 * Every source of large host memory (the C heap's malloc family, anonymous
 * mmap, the Python allocator domains) reports here.  A block is recorded once,
 * by the outermost allocator that handled it: while one of our hooks is inside
 * the allocator it forwarded to, host_guard is set on the thread and the hooks
 * underneath only forward (PyMem_RawMalloc -> malloc; jemalloc's malloc ->
 * mmap).  The same guard keeps the tracer's own allocations (the recorder,
 * libunwind, zstd) out of the log.
 *
 * Causal order: a release is recorded before the real call (another thread
 * may get the address back the moment it returns), an allocation after.
 *
 * The set is lock-free (a signal or a fork can leave nothing held) and is
 * consulted on every free of a block that may be large, from any thread.
 */
#ifndef TRACE_HOST_BLOCKS_H
#define TRACE_HOST_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include "trace_format.h"

/* Nonzero on a thread inside the tracer or inside an allocator one of our
 * hooks forwarded to: allocations seen then are not the application's. */
extern __thread int host_guard __attribute__((tls_model("initial-exec")));

static inline void host_guard_enter(void) { host_guard++; }
static inline void host_guard_leave(void) { host_guard--; }

/* Bytes from which a block counts as large (TRACE_HOST_THRESHOLD);
 * UINT64_MAX when large blocks are off.  Valid after host_blocks_start(). */
extern uint64_t host_threshold;

/* Blocks in the set: 0 lets a free skip every other test. */
extern _Atomic unsigned host_live;
static inline int host_any_live(void)
{
    return __atomic_load_n(&host_live, __ATOMIC_RELAXED) != 0;
}

/* Record a new block (domain: enum tf_host_domain, api: enum tf_host_api)
 * and add it to the set.  Call after the real allocation returned. */
void host_block_allocated(uint32_t domain, uint32_t api, void *p, uint64_t size);

/* If p is a live block: remove it, record its release and return its size
 * (and its domain through *domain when not NULL); else 0.  Call before the
 * real release. */
uint64_t host_block_releasing(uint32_t api, void *p, uint32_t *domain);

/* Just the event (for sources that keep their own table: mmap). */
void host_record(uint32_t kind, uint32_t domain, uint32_t api, void *p, uint64_t size);

/* Is p possibly in the set?  A cheap, lock-free test (one window count). */
int host_block_maybe_live(const void *p);

/* A coverage gap: something the tracer could not watch, recorded once per
 * `what` (compared by address: pass string literals) as an INFO record
 * "not_watched" = "WHAT: WHY". */
void host_gap(const char *what, const char *why);

/* From the library constructor, after the recorder started: settings, the
 * hooks' fast paths, and the gaps found at start (an allocator we cannot
 * interpose). */
void host_start(void);

/* After a dlopen: a process that has just loaded Python or CUDA starts
 * recording large blocks. */
void host_on_dlopen(void);

/* In a forked child, right after the recorder's new log: the blocks the
 * parent had belong to the parent's log. */
void host_fork_child(void);

/* Our malloc family, called directly: what a call to malloc (calloc,
 * realloc, free) from the program reaches, without the PLT.  For
 * python_alloc.c, whose wrappers of Python's raw domain would otherwise go
 * back through libpython and the PLT to these very functions.  Only when
 * host_malloc_is_ours(): the program's malloc is ours (no allocator exporting
 * malloc comes before libtrace.so), valid after host_malloc_start().  Each
 * is the very function the exported name stands for (an alias): its address
 * is what another object's GOT slot bound to our malloc holds. */
int host_malloc_is_ours(void);
void *host_malloc_call(size_t size);
void *host_calloc_call(size_t n, size_t each);
void *host_realloc_call(void *p, size_t size);
void host_free_call(void *p);

/* The sources' own parts of those (host_malloc.c, host_mmap.c). */
void host_malloc_start(void);
void host_mmap_start(void);
void host_mmap_fork_child(void);
/* The libpython whose arena allocator was found is gone (python.c): look
 * again at the next mapping. */
void host_mmap_forget_arenas(void);

#endif
