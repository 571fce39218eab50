/*
 * trace_api.h - tell the tracer what a memory pool is doing.
 *
 * Header only: include it, call the functions, link nothing.  Each call finds
 * libtrace.so's entry point at run time (once, through dlsym) and does nothing
 * when the program runs without the preload.  Link with -ldl on glibc < 2.34.
 *
 *     static int pool;
 *     pool = trace_pool_register("my-pool");
 *     uint64_t op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, size);
 *     ... find or split a block ...
 *     trace_pool_alloc(pool, ptr, size, granted, stream);
 *     trace_pool_op_end(pool, op);
 *
 * Every event recorded on this thread between op_begin and op_end (a CUDA
 * call, a garbage collection, another pool's operation) is recorded as nested
 * in the operation.  From Python, the same functions are reachable through
 * ctypes.CDLL(None) when the preload is active (see docs/pool-api.md).
 */
#ifndef TRACE_API_H
#define TRACE_API_H

#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TRACE_POOL_OP_ALLOC = 1, TRACE_POOL_OP_FREE = 2, TRACE_POOL_OP_OTHER = 3 };
enum { TRACE_SEGMENT_RELEASE = 0, TRACE_SEGMENT_GROW = 1 };

/* The table libtrace.so exports as trace_api_v1(). */
struct trace_api_v1 {
    int (*pool_register)(const char *name);
    uint64_t (*pool_op_begin)(int pool, int op, uint64_t arg);
    void (*pool_op_end)(int pool, uint64_t op);
    void (*pool_alloc)(int pool, const void *ptr, size_t requested, size_t granted, uint64_t stream);
    void (*pool_free)(int pool, const void *ptr, size_t size);
    void (*pool_segment)(int pool, int grow, const void *ptr, size_t size);
    void (*mark)(const char *text);
};

static inline const struct trace_api_v1 *trace_api__get(void)
{
    /* Looked up once per including module.  A benign race: every thread
     * stores the same value. */
    static const struct trace_api_v1 *api;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        const struct trace_api_v1 *(*get)(void) =
            (const struct trace_api_v1 *(*)(void))dlsym(RTLD_DEFAULT, "trace_api_v1");
        __atomic_store_n(&api, get ? get() : (const struct trace_api_v1 *)0, __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&api, __ATOMIC_RELAXED);
}

/* Returns a pool id (> 0), or 0 without the preload. */
static inline int trace_pool_register(const char *name)
{
    const struct trace_api_v1 *a = trace_api__get();
    return a ? a->pool_register(name) : 0;
}

/* op: TRACE_POOL_OP_*; arg: the requested size, or the pointer being freed.
 * Returns a token for trace_pool_op_end (0 without the preload). */
static inline uint64_t trace_pool_op_begin(int pool, int op, uint64_t arg)
{
    const struct trace_api_v1 *a = trace_api__get();
    return a ? a->pool_op_begin(pool, op, arg) : 0;
}

static inline void trace_pool_op_end(int pool, uint64_t op)
{
    const struct trace_api_v1 *a = trace_api__get();
    if (a) a->pool_op_end(pool, op);
}

/* The pool handed out ptr for a request of `requested` bytes, reserving
 * `granted` (after rounding and splitting). */
static inline void trace_pool_alloc(int pool, const void *ptr, size_t requested, size_t granted,
                                    uint64_t stream)
{
    const struct trace_api_v1 *a = trace_api__get();
    if (a) a->pool_alloc(pool, ptr, requested, granted, stream);
}

/* The pool takes ptr back (size: granted size, 0 if unknown).  Call it
 * before the block can be handed out again (before the pool's lock is
 * released), so that the log orders it before any allocation that reuses
 * the block on another thread; likewise a segment release before the memory
 * goes back to CUDA. */
static inline void trace_pool_free(int pool, const void *ptr, size_t size)
{
    const struct trace_api_v1 *a = trace_api__get();
    if (a) a->pool_free(pool, ptr, size);
}

/* The pool obtained (grow) or returned (release) a segment of device memory. */
static inline void trace_pool_segment(int pool, int grow, const void *ptr, size_t size)
{
    const struct trace_api_v1 *a = trace_api__get();
    if (a) a->pool_segment(pool, grow, ptr, size);
}

/* A user mark: free text, recorded with both stacks. */
static inline void trace_mark(const char *text)
{
    const struct trace_api_v1 *a = trace_api__get();
    if (a) a->mark(text);
}

#ifdef __cplusplus
}
#endif
#endif
