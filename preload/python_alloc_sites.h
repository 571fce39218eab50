/*
 * python_alloc_sites.h - which object allocations cannot be GC objects
 * (python_alloc_sites.c says how it is told, and why a wrong answer can only
 * be "record it").  All of it runs with the GIL held (or in a free-threaded
 * build, with learning off).
 */
#ifndef TRACE_PYTHON_ALLOC_SITES_H
#define TRACE_PYTHON_ALLOC_SITES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Finds the interpreter's functions that allocate only non-GC objects
 * (after initialisation, outside the allocator hooks); returns how many were
 * found (0: nothing is left out).  may_learn: call sites no name covers may
 * be learnt (off in a free-threaded build). */
unsigned py_alloc_sites_install(int may_learn);

/* How many of CPython's allocators of objects without GC (_PyObject_New,
 * _PyObject_NewVar) it found: their call sites are left out, marked. */
unsigned py_alloc_sites_nongc(void);
/* How many of the allocators of bytearray buffers it found (left out and
 * marked the same way: no objects). */
unsigned py_alloc_sites_buffers(void);

/* What to do with an OBJ-domain allocation whose wrapper returns to `ra`:
 * 0, record it (it may be a GC object; if the site is being learnt, `block`
 * is looked at by the wrapper's next call); PY_ALLOC_V_PLAIN, leave it out
 * (a str, int, float or bytes, which its free says too); PY_ALLOC_V_NOTOBJ,
 * leave it out and mark its address (no GC object, and its free cannot say
 * so: a dict key table, which is no object at all, or an object made by
 * _PyObject_New; block_marks.h).  A block under two words (malloc's 8-byte
 * ones, under PYTHONMALLOC=malloc) holds no object: PY_ALLOC_V_NOTOBJ, by
 * itself, whatever its site (nothing is read from it, and its site is not
 * learnt from it). */
unsigned py_alloc_site_verdict_slow(uintptr_t ra, const void *block, size_t size);

/* Verdicts by call site: return address << PY_ALLOC_V_SHIFT | state, 0 an
 * empty slot; a site's slot is its home slot or one of the next few
 * (python_alloc_sites.c).  The wrapper's hit on a site already decided in
 * its home slot is inline (every object allocation asks). */
#define PY_ALLOC_V_PLAIN 1u       /* leave its allocations out */
#define PY_ALLOC_V_GENERAL 2u     /* record them: named general allocator, or made something else */
#define PY_ALLOC_V_NOTOBJ 4u      /* leave them out, marked: no GC objects (or no objects) */
#define PY_ALLOC_V_DECIDED (PY_ALLOC_V_PLAIN | PY_ALLOC_V_GENERAL | PY_ALLOC_V_NOTOBJ)
#define PY_ALLOC_V_SHIFT 10
#define PY_ALLOC_VERDICTS 1024u
extern _Atomic uint64_t py_alloc_verdicts[PY_ALLOC_VERDICTS];
static inline uint32_t py_alloc_verdict_slot(uintptr_t ra)
{
    return (uint32_t)((ra * 0x9E3779B97F4A7C15ull) >> 54) & (PY_ALLOC_VERDICTS - 1);
}
static inline unsigned py_alloc_site_verdict(uintptr_t ra, const void *block, size_t size)
{
    if (__builtin_expect(size < 2 * sizeof(void *), 0))
        return PY_ALLOC_V_NOTOBJ;
    uint64_t v = atomic_load_explicit(&py_alloc_verdicts[py_alloc_verdict_slot(ra)],
                                      memory_order_relaxed);
    if (__builtin_expect(v >> PY_ALLOC_V_SHIFT == ra && ra != 0 && v & PY_ALLOC_V_DECIDED, 1))
        return (unsigned)v & (PY_ALLOC_V_PLAIN | PY_ALLOC_V_NOTOBJ);
    return py_alloc_site_verdict_slow(ra, block, size);
}

/* At the start of every OBJ-domain wrapper call, before the block it names
 * (if any) is touched: look at the object this thread's previous call made.
 * Then, in a free or a realloc, count it (before the block goes). */
extern __thread const void *py_alloc_pending __attribute__((tls_model("initial-exec")));
extern _Atomic uint64_t py_alloc_frees;
void py_alloc_sites_learn(void);
static inline void py_alloc_sites_observe(void)
{
    if (__builtin_expect(py_alloc_pending != 0, 0))
        py_alloc_sites_learn();
}
static inline void py_alloc_sites_freeing(void)
{
    /* A load and a store, not an atomic add: only a change is looked for. */
    atomic_store_explicit(&py_alloc_frees,
                          atomic_load_explicit(&py_alloc_frees, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* 1 when an OBJ-domain block being freed holds an object of a type those
 * functions make (so its allocation was not recorded either): str, int,
 * float or bytes, exactly.  Inline: most blocks a collection frees are
 * told by the range of those types alone (a call was 14 instructions of
 * each recorded free). */
extern uintptr_t py_alloc_plain_lo, py_alloc_plain_span;
int py_alloc_type_plain(const void *type);
static inline int py_alloc_block_plain(const void *block)
{
    const void *type = ((const void *const *)block)[1];
    return (uintptr_t)type - py_alloc_plain_lo <= py_alloc_plain_span && py_alloc_type_plain(type);
}

#endif
