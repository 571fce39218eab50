/*
 * python_alloc.c - wrappers around the Python allocator domains.
 *
 * Installed after initialisation with PyMem_SetAllocator, each wrapper
 * forwards to the allocator it replaced (so blocks allocated before we came
 * are freed correctly, and PYTHONMALLOC choices are kept).  Wrapping costs an
 * indirect call on every allocation, so we wrap only what is needed:
 *  - large host buffers (host_blocks.c): the RAW domain.  pymalloc, behind
 *    the MEM and OBJ domains by default, hands every block over 512 bytes to
 *    PyMem_RawMalloc, so RAW sees them all (and reports them as RAW).  Only
 *    when PYTHONMALLOC picks plain malloc do MEM and OBJ need wrappers too.
 *    The malloc hooks (host_malloc.c) would see these blocks as well; the
 *    wrapper sets host_guard around the forwarded call, so the block is
 *    recorded once, by the outermost allocator, with its Python domain;
 *  - the opt-in sample of allocations (TRACE_PY_ALLOCS=N): one py_alloc event
 *    every N OBJ-domain allocations that may be GC objects, with the Python
 *    stack; the native stack too only with TRACE_PY_ALLOC_NATIVE=1 (a native
 *    walk per object was more than half of what this mode added on the
 *    bench's JSON workload).  Allocations made by CPython's own constructors
 *    of non-GC objects (str, int, float, bytes), by its allocator of objects
 *    without GC (_PyObject_New: range objects, extension types), and dict
 *    key tables (no objects at all), are told apart by their caller and left
 *    out, and so are their frees (python_alloc_sites.c; the address of a
 *    block whose free cannot tell is marked, block_marks.h), unless
 *    TRACE_PY_ALLOC_ALL=1 asks for every object allocation.
 *  - with every allocation recorded (TRACE_PY_ALLOCS=1), the OBJ-domain frees
 *    that happen while a collection runs on the thread (python_gc.c): one
 *    py_free each, before the block is given back, nested under the
 *    collection's gc_start.  With the allocation of each in the log, the
 *    report says which allocation sites the collector freed.  Frees outside
 *    collections are not recorded (a flag test each).  With a sample (N > 1)
 *    a free could not be matched to its allocation: none are recorded.
 * The per-generation allocation counters come from the interpreter itself
 * (python_gc.c), at no cost per allocation.
 */
#include "python_internal.h"
#include "python_alloc_sites.h"
#include "block_marks.h"
#include "config.h"
#include "dl_object.h"
#include "got_slot.h"
#include "host_blocks.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct domain_wrapper {
    py_allocator prev;
    int domain;
    /* prev is CPython's own raw allocator (_PyMem_RawMalloc and its
     * siblings: malloc, calloc, realloc and free, a zero size made 1) and
     * malloc is ours: a small block's call goes straight to our malloc
     * hook.  The way through prev is an indirect call into libpython and
     * the PLT back into libtrace.so: with two more indirect jumps and a
     * frame per call it was 2 to 3 % of a regex-heavy program (_sre's
     * data stack grows through PyMem_RawMalloc millions of times).  Each
     * direct call first looks at the slot it skips (raw_slot_ours). */
    int direct;
    /* Another malloc comes before ours (jemalloc preloaded first, ASan), so
     * our hook does not clear the first word of fresh blocks: the wrapper
     * does, for the domain objects' blocks come from (see fresh_block).  So
     * it does where an embedding program set an allocator of its own on the
     * domain (no malloc of ours underneath: one that keeps freed blocks
     * whole gave a false report per reuse). */
    int clear_fresh;
} domain_wrapper;

/* A fresh block's first word is cleared, as host_malloc.c's hook does for
 * the blocks of its own malloc: a block may still hold the header of an
 * object released with its count at 1 (an allocator that keeps no free list
 * inside freed blocks, jemalloc's, leaves it whole), and an extension's
 * PyObject_Init over it would look like a double initialisation: a false
 * report (python_init_check.c). */
static inline void *fresh_block(const domain_wrapper *w, void *p, size_t size)
{
    if (__builtin_expect(w->clear_fresh, 0) && p && size >= sizeof(uintptr_t))
        *(uintptr_t *)p = 0;
    return p;
}

static domain_wrapper wrappers[3];

/* The GOT slots through which CPython's raw allocator calls malloc, calloc,
 * realloc and free: libpython's, or a static interpreter's own (the
 * program's PLT).  The direct path skips them, so a tool that rewrites them
 * to watch the C heap (memray, in every loaded object) saw none of Python's
 * raw blocks: its Tracker counted 122 allocations where it counted 555 bare
 * (3.12.1).  So each direct call first reads its slot, one load and a
 * compare: unless it still holds our hook (bound at load time, or lazily on
 * the first call through it), the call goes CPython's way, through the
 * slot, to whatever now holds it (an LD_AUDIT symbind, a rewrite, the
 * loader's lazy resolver).  Without a slot found, each points at our own
 * hook's address (own_hooks): the shortcut stays. */
enum { RAW_MALLOC, RAW_CALLOC, RAW_REALLOC, RAW_FREE, RAW_SLOTS };
static const char *const raw_slot_names[RAW_SLOTS] = { "malloc", "calloc", "realloc", "free" };
static void *const own_hooks[RAW_SLOTS] = {
    (void *)host_malloc_call, (void *)host_calloc_call, (void *)host_realloc_call, (void *)host_free_call,
};
static void *const *raw_slot[RAW_SLOTS] = { &own_hooks[0], &own_hooks[1], &own_hooks[2], &own_hooks[3] };

/* hook: the host_*_call matching the slot (its address, a constant here). */
static inline int raw_slot_ours(unsigned which, void *hook)
{
    return __atomic_load_n(raw_slot[which], __ATOMIC_RELAXED) == hook;
}

/* At wrap time, in the object that holds CPython's raw malloc. */
static void find_raw_slots(const void *raw_malloc)
{
    void *const *found[RAW_SLOTS];
    got_slot_find(raw_malloc, raw_slot_names, found, RAW_SLOTS);
    for (unsigned i = 0; i < RAW_SLOTS; i++)
        raw_slot[i] = found[i] ? found[i] : &own_hooks[i];
}

void python_alloc_forget(void)
{
    for (unsigned i = 0; i < RAW_SLOTS; i++)
        raw_slot[i] = &own_hooks[i];
}

static uint32_t sample_every;                  /* OBJ domain: GIL held, no atomics */
static uint32_t sample_countdown;
static unsigned sample_stacks;                 /* REC_PY_STACK, and REC_NATIVE_STACK if asked */
static int record_gc_frees;                    /* every allocation is recorded */
static int obj_bypassed;                       /* our OBJ wrapper left the chain, and the log says so */
static int filter_plain;                       /* leave out allocations that cannot be GC objects */
static int probing, probe_plain;               /* see probe_filter */
static uint64_t obj_calls;                     /* OBJ-domain allocations through us (GIL held) */

/* api: 0, or TF_HOST_API_REALLOC for an object resized (_PyTuple_Resize,
 * PyObject_GC_Resize): the same object at a new address, not a new one (a
 * tuple built from a generator was counted as 4 to 12 objects). */
static inline __attribute__((always_inline)) void record_object_allocation_as(void *p, size_t size, uint32_t api)
{
    /* Its free, if a collection makes it, is to be recorded (block_marks.h). */
    if (record_gc_frees)
        block_marks_clear(p);
    rec_py_alloc((uint64_t)(uintptr_t)p, size, api, sample_stacks);
}

static __attribute__((noinline)) void record_object_allocation(void *p, size_t size, uint32_t api)
{
    record_object_allocation_as(p, size, api);
}

/* api 0, a constant to the recorder's door (rec_py_alloc): its usual
 * way for a new object has api folded away (recorder.c). */
static __attribute__((noinline)) void record_new_object(void *p, size_t size)
{
    record_object_allocation_as(p, size, 0);
}

/* site: where the domain's function returns to (python_alloc_sites.h).
 * Inlined in the wrappers: most calls end at the first test. */
static inline __attribute__((always_inline)) void sample_object_allocation(void *p, size_t size,
                                                                          uintptr_t site, uint32_t api)
{
    unsigned left_out = filter_plain ? py_alloc_site_verdict(site, p, size) : 0;
    if (__builtin_expect(probing, 0)) {
        probe_plain |= left_out == PY_ALLOC_V_PLAIN;
        return;
    }
    /* Most allocations: a str or int, left out.  One that is no object (a
     * dict key table) or an object without GC (_PyObject_New's) is left
     * out only once its address is marked, so that its free in a
     * collection is left out too (block_marks.h). */
    if (__builtin_expect(left_out != 0, 1) &&
        (left_out == PY_ALLOC_V_PLAIN || !record_gc_frees || block_marks_set(p)))
        return;
    if (sample_every && --sample_countdown == 0) {
        sample_countdown = sample_every;
        if (api)
            record_object_allocation(p, size, api);
        else
            record_new_object(p, size);
    }
}

/* entered: this call is the outermost large request (see enter_large).
 * resized: a realloc of a block (not of NULL). */
static void after_allocation(const domain_wrapper *w, uint32_t api, void *p, size_t size,
                             int entered, uintptr_t site, int resized)
{
    if (!p)
        return;
    if (w->domain == PY_DOMAIN_OBJ)
        sample_object_allocation(p, size, site, resized ? TF_HOST_API_REALLOC : 0);
    if (entered)
        host_block_allocated((uint32_t)w->domain + 1, api, p, size);   /* TF_HOST_RAW/MEM/OBJ */
}

/* Brackets the forwarded call of a large request: pymalloc hands large
 * blocks to PyMem_RawMalloc, which is wrapped too, and that calls malloc,
 * which is hooked: the block is recorded once, by the outermost. */
static int enter_large(size_t size)
{
    if (size < host_threshold || host_guard)
        return 0;
    host_guard_enter();
    return 1;
}

static void leave_large(int entered)
{
    if (entered)
        host_guard_leave();
}

static uint64_t release(void *ptr)
{
    /* The set first: nearly always empty, so one test. */
    return host_any_live() && ptr && !host_guard ? host_block_releasing(TF_HOST_API_FREE, ptr, NULL)
                                                 : 0;
}

/* Where the wrapper returns to: read in the wrapper itself (the functions
 * it calls have their own). */
#define RETURN_ADDRESS() ((uintptr_t)__builtin_return_address(0))

static void *wrapped_malloc(void *ctx, size_t size)
{
    domain_wrapper *w = ctx;
    /* The RAW domain (and MEM under PYTHONMALLOC=malloc) sees every block
     * pymalloc passes on, millions in a text-heavy program: a small one is
     * forwarded and nothing else (about 12 instructions instead of 50).
     * Only the OBJ domain samples small blocks. */
    if (__builtin_expect((size < host_threshold || host_guard) && w->domain != PY_DOMAIN_OBJ, 1))
        return w->direct && raw_slot_ours(RAW_MALLOC, (void *)host_malloc_call)
                   ? host_malloc_call(size ? size : 1)
                   : fresh_block(w, w->prev.malloc(w->prev.ctx, size), size);
    if (w->domain == PY_DOMAIN_OBJ)
        py_alloc_sites_observe();
    int entered = enter_large(size);
    void *p = fresh_block(w, w->prev.malloc(w->prev.ctx, size), size);
    leave_large(entered);
    after_allocation(w, TF_HOST_API_MALLOC, p, size, entered, RETURN_ADDRESS(), 0);
    return p;
}

static void *wrapped_calloc(void *ctx, size_t nelem, size_t elsize)
{
    domain_wrapper *w = ctx;
    if (w->domain == PY_DOMAIN_OBJ) {
        py_alloc_sites_observe();
        obj_calls++;
    }
    int entered = enter_large(nelem * elsize);
    void *p = !w->direct || !raw_slot_ours(RAW_CALLOC, (void *)host_calloc_call)
                  ? w->prev.calloc(w->prev.ctx, nelem, elsize)
              : nelem && elsize ? host_calloc_call(nelem, elsize) : host_calloc_call(1, 1);
    leave_large(entered);
    after_allocation(w, TF_HOST_API_CALLOC, p, nelem * elsize, entered, RETURN_ADDRESS(), 0);
    return p;
}

/* A realloc of a large buffer is a free and an allocation: the free is
 * recorded before the block can be reused by another thread. */
static void *wrapped_realloc(void *ctx, void *ptr, size_t size)
{
    domain_wrapper *w = ctx;
    if (w->domain == PY_DOMAIN_OBJ) {
        py_alloc_sites_observe();
        py_alloc_sites_freeing();
    }
    uint64_t old_size = ptr && !host_guard && host_any_live()
                            ? host_block_releasing(TF_HOST_API_REALLOC, ptr, NULL) : 0;
    /* The guard also covers a shrink of a tracked block: the malloc hook
     * underneath must not see its release a second time. */
    int entered = enter_large(old_size ? host_threshold : size);
    void *p = w->direct && raw_slot_ours(RAW_REALLOC, (void *)host_realloc_call)
                  ? host_realloc_call(ptr, size ? size : 1)
                  : w->prev.realloc(w->prev.ctx, ptr, size);
    leave_large(entered);
    if (p)
        after_allocation(w, TF_HOST_API_REALLOC, p, size, entered && size >= host_threshold,
                         RETURN_ADDRESS(), ptr != NULL);
    else if (old_size && size)
        host_block_allocated((uint32_t)w->domain + 1, TF_HOST_API_REALLOC, ptr, old_size);
    return p;
}

/* A free in a collection whose first tests passed (obj_free_collecting's
 * or python_alloc_record_collected's): recorded unless the collection does
 * not free it (python_gc.c) or its allocation was left out.  Tail calls
 * to the recorder: no frame of its own but where a collection's flag
 * must be looked at the long way. */
static __attribute__((noinline)) uint64_t record_collected(const void *block)
{
    /* Allocations are no longer seen (python_alloc_look): neither are the
     * deaths python_free_lists.c would record. */
    if (obj_bypassed || !python_gc_frees_collected_slow(block))
        return 0;
    /* The mark before the type word: a marked block may be under two words
     * (python_alloc_sites.h), with no type word to read.  (One that could
     * not be marked, for want of memory for its page of bits, was recorded:
     * its free is read, 8 bytes into its neighbour.) */
    if (filter_plain && (block_marks_test(block) || py_alloc_block_plain(block)))
        return 0;   /* its allocation was left out: python_alloc_sites.c */
    return rec_py_free(TF_HOST_OBJ, (uint64_t)(uintptr_t)block);
}

uint64_t python_alloc_record_collected(const void *block)
{
    if (!record_gc_frees || !block || !python_gc_collecting)
        return 0;
    return record_collected(block);
}

static void obj_free_slow(void *ctx, void *ptr);

static void wrapped_free(void *ctx, void *ptr)
{
    domain_wrapper *w = ctx;
    /* Not reached for the OBJ domain, whose wrapper is obj_free
     * (wrap_domain), but for its sake: the same way. */
    if (w->domain == PY_DOMAIN_OBJ) {
        obj_free_slow(ctx, ptr);
        return;
    }
    release(ptr);
    if (w->direct && raw_slot_ours(RAW_FREE, (void *)host_free_call))
        host_free_call(ptr);
    else
        w->prev.free(w->prev.ctx, ptr);
}

/* The RAW domain's malloc and free when it is CPython's own and our malloc
 * hooks are underneath (domain_wrapper.direct): what nearly every call
 * does, a small block forwarded, alone in a function without a frame to
 * set up for the rest, which goes to the general wrappers (a tail call:
 * the return address they read is still the domain's caller's).  In
 * bench/workloads/regex_work (about 430,000 raw pairs at scale 0.2, under
 * callgrind) the general wrappers' way took 24 instructions per malloc and
 * 22 per free before the hooks, about 1 % of the program. */
static void *raw_direct_malloc(void *ctx, size_t size)
{
    if (__builtin_expect(size < host_threshold && raw_slot_ours(RAW_MALLOC, (void *)host_malloc_call), 1))
        return host_malloc_call(size ? size : 1);
    return wrapped_malloc(ctx, size);
}

static void raw_direct_free(void *ctx, void *ptr)
{
    if (__builtin_expect(!host_any_live() && raw_slot_ours(RAW_FREE, (void *)host_free_call), 1)) {
        host_free_call(ptr);
        return;
    }
    wrapped_free(ctx, ptr);
}

/* The OBJ domain's malloc and free with TRACE_PY_ALLOCS: every object's
 * allocation and free passes here, most of them strs and ints left out, so
 * a small block goes the shortest way (the general wrappers, for a large
 * one, are reached by a tail call: the return address they read is still
 * the domain's caller's). */
static void *obj_malloc(void *ctx, size_t size)
{
    domain_wrapper *w = ctx;
    if (__builtin_expect(size >= host_threshold, 0))
        return wrapped_malloc(ctx, size);
    uintptr_t site = RETURN_ADDRESS();
    py_alloc_sites_observe();
    obj_calls++;
    void *p = fresh_block(w, w->prev.malloc(w->prev.ctx, size), size);
    if (p)
        sample_object_allocation(p, size, site, 0);
    return p;
}

/* The OBJ domain's free in a collection (python_gc.c), with every
 * allocation recorded or not: each test once, and one call to record the
 * free, before the block is given back (another thread could have it the
 * moment it is).  The way through note_object_free_slow and
 * python_alloc_record_collected tested the collection's count three
 * times, record_gc_frees and the pointer twice, and the domain (only the
 * OBJ domain's wrapper comes here): 160 instructions a recorded free
 * outside the recorder (callgrind, churn_cycles 0.1 on 3.11). */
static __attribute__((noinline)) void obj_free_collecting(void *ctx, void *ptr)
{
    domain_wrapper *w = ctx;
    /* A free of a free-listed type's block is told to python_free_lists.c
     * first, whatever the rest says: a deallocation it watches learns so
     * that its block was given back. */
    if (record_gc_frees && ptr && !free_lists_left_out(ptr))
        record_collected(ptr);
    release(ptr);
    w->prev.free(w->prev.ctx, ptr);
}

/* obj_free's other ways out: an allocation site to learn, or a large host
 * block live (release has something to look for), a collection on the
 * thread or not. */
static __attribute__((noinline)) void obj_free_slow(void *ctx, void *ptr)
{
    domain_wrapper *w = ctx;
    py_alloc_sites_observe();
    py_alloc_sites_freeing();
    if (python_gc_collecting) {
        obj_free_collecting(ctx, ptr);
        return;
    }
    release(ptr);
    w->prev.free(w->prev.ctx, ptr);
}

/* Nearly every free: nothing to learn, no collection on the thread, no
 * large host block live (release has nothing to look for), so the block
 * goes on by a tail call, without a frame (the way through obj_free_slow
 * was 24 instructions; this, 17: callgrind, churn_cycles 0.1 on 3.11). */
static void obj_free(void *ctx, void *ptr)
{
    domain_wrapper *w = ctx;
    if (__builtin_expect(!py_alloc_pending && !python_gc_collecting && !host_any_live(), 1)) {
        py_alloc_sites_freeing();
        w->prev.free(w->prev.ctx, ptr);
        return;
    }
    /* A collection's free, nothing else: straight there (obj_free_slow's
     * frame and tests were 20 instructions of each). */
    if (__builtin_expect(python_gc_collecting && !py_alloc_pending && !host_any_live(), 1)) {
        py_alloc_sites_freeing();
        obj_free_collecting(ctx, ptr);
        return;
    }
    obj_free_slow(ctx, ptr);
}

/* Is the raw domain CPython's own?  _PyMem_GetCurrentAllocatorName says
 * "malloc" or "pymalloc" only when it is (with pymalloc or plain malloc
 * behind the other two domains); a debug allocator, tracemalloc, mimalloc or
 * an embedding program's allocator gives another answer. */
static int cpython_raw_allocator(void)
{
    const char *name = py._PyMem_GetCurrentAllocatorName ? py._PyMem_GetCurrentAllocatorName() : NULL;
    return name && (strcmp(name, "malloc") == 0 || strcmp(name, "pymalloc") == 0);
}

/* What _PyMem_GetCurrentAllocatorName said before we wrapped a domain, and
 * the three domains' allocators it said it of. */
static const char *name_before;
static py_allocator allocators_before[3];

static void note_allocators_before(void)
{
    const char *name = py._PyMem_GetCurrentAllocatorName ? py._PyMem_GetCurrentAllocatorName() : NULL;
    if (!name)
        return;     /* one it has no name for, or a later round's, still wrapped */
    name_before = name;
    for (int d = 0; d < 3; d++)
        py.PyMem_GetAllocator(d, &allocators_before[d]);
}

/* The name without our wrappers: each domain's allocator seen through ours
 * is still the one the name was read for. */
static const char *name_through_wrappers(void)
{
    if (!name_before)
        return NULL;
    for (int d = 0; d < 3; d++) {
        py_allocator a;
        py.PyMem_GetAllocator(d, &a);
        if (a.ctx == &wrappers[d])
            a = wrappers[d].prev;
        if (memcmp(&a, &allocators_before[d], sizeof a) != 0)
            return NULL;
    }
    return name_before;
}

/* Every GC object the interpreter counts (young) came from its OBJ domain's
 * malloc or calloc, freelists aside, so 64 of them with none through our
 * wrapper since the last look mean it is out of the chain.  Only told: put
 * back on top of an allocator that may still hold ours as its own
 * predecessor, ours would call itself. */
void python_alloc_look(uint64_t young)
{
    static uint64_t calls_at_last_look;
    if (!sample_every || obj_bypassed)
        return;
    int bypassed = young >= 64 && obj_calls == calls_at_last_look;
    calls_at_last_look = obj_calls;
    if (!bypassed)
        return;
    py_allocator now;
    py.PyMem_GetAllocator(PY_DOMAIN_OBJ, &now);
    if (now.ctx == &wrappers[PY_DOMAIN_OBJ])
        return;
    obj_bypassed = 1;
    rec_info("not_watched", "object allocations after the program replaced the object allocator "
                            "(tracemalloc.stop() after -X tracemalloc or PYTHONTRACEMALLOC does): ours "
                            "went with it");
}

/* CPython names its allocators ("pymalloc", "malloc_debug", ...) by
 * comparing each domain's functions with its own, so our wrappers made the
 * answer NULL: _testcapi.pymem_getallocatorsname() raised RuntimeError, and
 * test_cmd_line's PYTHONMALLOC and -X dev tests failed under the preload.
 * Calls from other libraries (extension modules) come here in an
 * interpreter with a shared libpython, and get the answer they would get
 * without us; libpython's own calls, and a static interpreter's, do not
 * (docs/python.md). */
__attribute__((visibility("default"))) const char *_PyMem_GetCurrentAllocatorName(void)
{
    if (py_unloaded()) {
        /* The traced library and what real held went (python.c). */
        const char *(*next)(void);
        *(void **)&next = py_next_after_unload(PY_EXPORT_ALLOCATOR_NAME, __builtin_return_address(0));
        return next ? next() : NULL;
    }
    static const char *(*real)(void);
    if (!real) {
        *(void **)&real = py_next("_PyMem_GetCurrentAllocatorName");
        py_note_traced(*(void **)&real);
    }
    /* A second libpython's own (python_api.h): its allocators are not ours. */
    const char *(*own)(void);
    *(void **)&own = py_own_for_caller(PY_EXPORT_ALLOCATOR_NAME, __builtin_return_address(0));
    if (own && own != real)
        return own();
    const char *name = real ? real() : NULL;
    return name ? name : name_through_wrappers();
}

/* sys._debugmallocstats() prints pymalloc's statistics only when the object
 * domain's functions are CPython's own (_PyMem_PymallocEnabled compares
 * them, through the debug hooks if any), so our OBJ wrapper
 * (TRACE_PY_ALLOCS) made it print nothing of pymalloc: "Small block
 * threshold" missing, and test_sys.test_debugmallocstats failed, on every
 * version.  For the call, the allocator we wrapped is put back, then ours:
 * the statistics allocate nothing, and the caller holds the GIL.  A later
 * allocator on top of ours (tracemalloc) is left alone, as it would hide
 * pymalloc bare too.  libpython calls it through its PLT (sysmodule.c,
 * Py_FinalizeEx with PYTHONMALLOCSTATS) in an interpreter with a shared
 * libpython; a static interpreter's calls do not come here (docs/python.md). */
__attribute__((visibility("default"))) int _PyObject_DebugMallocStats(FILE *out)
{
    if (py_unloaded()) {
        /* The traced library and what real held went (python.c). */
        int (*next)(FILE *);
        *(void **)&next = py_next_after_unload(PY_EXPORT_DEBUG_MALLOC_STATS, __builtin_return_address(0));
        return next ? next(out) : 0;
    }
    static int (*real)(FILE *);
    if (!real) {
        *(void **)&real = py_next("_PyObject_DebugMallocStats");
        py_note_traced(*(void **)&real);
    }
    int (*own)(FILE *);
    *(void **)&own = py_own_for_caller(PY_EXPORT_DEBUG_MALLOC_STATS, __builtin_return_address(0));
    if (own && own != real)
        return own(out);
    if (!real)
        return 0;
    domain_wrapper *w = &wrappers[PY_DOMAIN_OBJ];
    py_allocator now;
    if (!w->prev.malloc || !py.PyMem_GetAllocator || !py.PyMem_SetAllocator)
        return real(out);
    py.PyMem_GetAllocator(PY_DOMAIN_OBJ, &now);
    if (now.ctx != w)
        return real(out);
    py.PyMem_SetAllocator(PY_DOMAIN_OBJ, &w->prev);
    int r = real(out);
    py.PyMem_SetAllocator(PY_DOMAIN_OBJ, &now);
    return r;
}

/* Whether the library holding the allocator we wrapped on a domain asks for
 * that domain's allocator (ret: where its call returns to), where that
 * allocator is not the interpreter's own (real: CPython's getter). */
static int owner_asks(const domain_wrapper *w, const void *ret, const void *real)
{
    uintptr_t owner = dl_object_start(*(const void *const *)&w->prev.malloc);
    return owner && owner == dl_object_start(ret) && owner != dl_object_start(real);
}

/* A library that set its allocator before the interpreter started (Scalene's
 * libscalene.so, preloaded first, in its constructor) is what we wrap
 * (foreign_allocator, or TRACE_PY_ALLOCS).  Scalene 2.x then "reinstalls"
 * it once the interpreter runs (pywhere's populate_struct): it reads the
 * domain's allocator, and unless that is its own, keeps it as its
 * predecessor and sets its own on top.  It read ours, which forwards to it:
 * every object allocation went round the two until the stack overflowed
 * (SIGSEGV at start, a log without END).  So the owner of the allocator we
 * wrapped, asking, is told its own allocator: it finds itself in place and
 * leaves the chain as it is, ours above it.  An owner that then put itself
 * on top regardless would call itself, as it would through ours.  Everyone
 * else is told the truth.  Reached by calls from other libraries in an
 * interpreter with a shared libpython (their dlsym and PLT find ours
 * first), as _PyMem_GetCurrentAllocatorName is. */
static void get_allocator(int domain, py_allocator *out)
{
    const void *ret = __builtin_return_address(0);
    void (*next)(int, py_allocator *);
    if (py_unloaded()) {
        /* The traced library and what real held went (python.c). */
        *(void **)&next = py_next_after_unload(PY_EXPORT_GET_ALLOCATOR, ret);
        if (next)
            next(domain, out);
        else
            memset(out, 0, sizeof *out);
        return;
    }
    static void (*real)(int, py_allocator *);
    if (!real) {
        *(void **)&real = py_next("PyMem_GetAllocator");
        /* None after us: a static interpreter's comes before us, and only
         * another copy of libtrace.so preloaded before this one calls ours
         * there (its own lookup found ours next). */
        if (!real) {
            void *first = py_global_sym("PyMem_GetAllocator");
            if (first != (void *)(uintptr_t)get_allocator)
                *(void **)&real = first;
        }
        py_note_traced(*(void **)&real);
    }
    /* A second libpython's own (python_api.h): its allocators are not ours. */
    *(void **)&next = py_own_for_caller(PY_EXPORT_GET_ALLOCATOR, ret);
    if (next && next != real) {
        next(domain, out);
        return;
    }
    if (!real) {
        memset(out, 0, sizeof *out);
        return;
    }
    real(domain, out);
    if (domain >= 0 && domain < 3 && out->ctx == &wrappers[domain] &&
        owner_asks(&wrappers[domain], ret, *(void **)&real))
        *out = wrappers[domain].prev;
}
/* Exported under an alias: inside libtrace.so the exported name's address
 * is the global scope's first definition (a static interpreter's own). */
__attribute__((visibility("default"), alias("get_allocator"))) void PyMem_GetAllocator(int domain, py_allocator *out);

/* PYTHONMALLOC=malloc (or malloc_debug): MEM and OBJ go straight to malloc,
 * not through the RAW domain. */
static int python_malloc_bypasses_raw(void)
{
    const char *m = getenv("PYTHONMALLOC");
    return m && strncmp(m, "malloc", 6) == 0;
}

/* The domain's allocator is the embedding program's own (set before
 * Py_Initialize): CPython names none of its allocators then.  Only asked
 * where the double-initialisation check reads headers. */
static int foreign_allocator;

static void wrap_domain(int domain)
{
    domain_wrapper *w = &wrappers[domain];
    py_allocator current;
    py.PyMem_GetAllocator(domain, &current);
    if (domain == PY_DOMAIN_RAW)
        python_early_hook_see_through(&current);
    if (current.malloc == wrapped_malloc || current.malloc == raw_direct_malloc ||
        current.malloc == obj_malloc) {
        /* A later round of an embedding program: still wrapped (under the
         * previous exit's rescue, whose work is done). */
        py.PyMem_SetAllocator(domain, &current);
        return;
    }
    w->domain = domain;
    w->prev = current;
    w->direct = domain == PY_DOMAIN_RAW && cpython_raw_allocator() && host_malloc_is_ours();
    if (w->direct)
        find_raw_slots(*(void **)&current.malloc);
    /* Objects' blocks: pymalloc's (it keeps its free list in freed blocks)
     * or, for large ones and under PYTHONMALLOC=malloc, the RAW domain's or
     * OBJ's own straight from malloc. */
    w->clear_fresh = (!host_malloc_is_ours() &&
                      (domain == PY_DOMAIN_RAW || (domain == PY_DOMAIN_OBJ && python_malloc_bypasses_raw()))) ||
                     (foreign_allocator && domain != PY_DOMAIN_MEM);
    py_allocator ours = { w, wrapped_malloc, wrapped_calloc, wrapped_realloc, wrapped_free };
    if (w->direct) {
        ours.malloc = raw_direct_malloc;
        ours.free = raw_direct_free;
    } else if (domain == PY_DOMAIN_OBJ) {
        ours.malloc = obj_malloc;
        ours.free = obj_free;
    }
    py.PyMem_SetAllocator(domain, &ours);
}


/* Whether the filter works in this interpreter: a str made through
 * PyUnicode_New must reach our wrapper with a return address inside
 * PyUnicode_New.  Where PyObject_Malloc calls the domain's function instead
 * of jumping to it (a static interpreter with pymalloc inlined), every
 * allocation returns into PyObject_Malloc and the filter leaves nothing
 * out: the INFO record says so rather than claim it. */
static int probe_filter(void)
{
    py_object *(*unicode_new)(ptrdiff_t, uint32_t);
    *(void **)&unicode_new = py_sym("PyUnicode_New");
    if (!unicode_new)
        return 0;
    probing = 1;
    probe_plain = 0;
    py_object *s = unicode_new(64, 127);   /* 64 characters: not a cached singleton */
    probing = 0;
    if (!s) {
        py.PyErr_Clear();
        return 0;
    }
    py.Py_DecRef(s);
    return probe_plain;
}

/* With TRACE_PY_ALLOCS: which object allocations are recorded, in an INFO
 * record (python_alloc_sites.c). */
static void choose_filter(const trace_config *c, unsigned known)
{
    char text[256];
    if (c->py_alloc_all) {
        filter_plain = 0;
        rec_info("py_allocs", "every object allocation (TRACE_PY_ALLOC_ALL=1)");
        return;
    }
    if (filter_plain && !probe_filter())
        filter_plain = 0;
    if (filter_plain)
        snprintf(text, sizeof text, "GC objects: allocations by %u of CPython's constructors of str, "
                 "int, float and bytes,%s%s and by call sites seen making only those or dict key tables, "
                 "left out", known, py_alloc_sites_nongc() ? " by its allocator of objects without GC," : "",
                 py_alloc_sites_buffers() ? " of bytearray buffers," : "");
    else
        snprintf(text, sizeof text, "every object allocation: %s",
                 known ? "PyObject_Malloc does not return to its caller in this interpreter"
                       : "none of CPython's non-GC constructors found");
    rec_info("py_allocs", text);
}

void python_alloc_install(void)
{
    const trace_config *c = trace_config_get();
    sample_every = c->py_alloc_sample;
    sample_countdown = sample_every;
    sample_stacks = REC_PY_STACK | (c->py_alloc_native ? REC_NATIVE_STACK : 0);
    record_gc_frees = sample_every == 1;
    unsigned known = 0;
    filter_plain = 0;
    if (sample_every && !c->py_alloc_all) {
        known = py_alloc_sites_install(!strstr(py.Py_GetVersion(), "free-threading"));
        filter_plain = known > 0;   /* the wrapper asks from its first call */
    }
    /* The domains objects' blocks come from are wrapped for the double
     * initialisation check alone when another malloc comes first: without
     * large host buffers recorded (TRACE_HOST_BUFFERS=0) nothing else would
     * clear their fresh blocks (fresh_block), and jemalloc's stale headers
     * were 168 false reports in 200 calls of test_double_init's
     * make_over_stale. */
    int reads_headers = python_init_check_reads_headers();
    foreign_allocator = reads_headers && py._PyMem_GetCurrentAllocatorName &&
                        !py._PyMem_GetCurrentAllocatorName() && !name_through_wrappers();
    int for_blocks = c->host_buffers || (reads_headers && (!host_malloc_is_ours() || foreign_allocator));
    int bypass = python_malloc_bypasses_raw();
    note_allocators_before();
    /* Objects' blocks in pymalloc's pools only: a word past a small block
     * is then still in its pool (python_free_lists.c reads one). */
    if (record_gc_frees)
        free_lists_install(name_before && strcmp(name_before, "pymalloc") == 0);
    if (for_blocks)
        wrap_domain(PY_DOMAIN_RAW);
    if (c->host_buffers && bypass)
        wrap_domain(PY_DOMAIN_MEM);
    if ((for_blocks && bypass) || sample_every || foreign_allocator)
        wrap_domain(PY_DOMAIN_OBJ);
    if (sample_every)
        choose_filter(c, known);
}
