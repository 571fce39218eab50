/*
 * python_free_lists.c - the deaths of objects CPython keeps on free lists,
 * for the collections' frees (TRACE_PY_ALLOCS=1).
 *
 * A collection's frees are seen where blocks go back to the object
 * allocator (python_alloc.c).  Tuples, lists, dicts, contexts, async
 * generators' asend objects (and frames on 3.8 to 3.10, bound and builtin
 * methods on 3.8) are not always given back when they die: their
 * deallocator keeps a number of them on a free list for the next object of
 * the type, and frees that list's blocks only when a collection of the
 * oldest generation empties it.  Seen at the allocator alone, both went
 * wrong (a helper's ground truth, every interpreter 3.8 to 3.13):
 *  - a cycle's list or tuple that went to its free list was never counted
 *    as collected (gc.collect(1) said 2998 objects, the report 1419);
 *  - objects that died by their count long before, and waited on a free
 *    list, were counted as collected by the collection that emptied the
 *    list (2,000 tuples of a program without a single cycle, at exit).
 * So the deallocators of these types are wrapped (one pointer written per
 * type, as python_code_deaths.c does for code objects).  Inside a
 * collection, an object that the real deallocator did not give back died
 * there: its free is recorded then.  A free of a block of one of these
 * types that comes from no deallocation of it is the emptying of a free
 * list (or a zombie frame given back with its code object): not recorded.
 *
 * Outside collections the wrapper costs a thread-local test and the call.
 * Everything here runs with the GIL, inside the interpreter's deallocation:
 * it allocates nothing and takes no lock.
 */
#include "python_internal.h"
#include "readable_run.h"

#include <stdint.h>
#include <string.h>

typedef void (*destructor_fn)(void *);

/* PyTypeObject on 64-bit CPython 3.8 to 3.13 (python_code_deaths.c). */
#define TYPE_NAME 24
#define TYPE_DEALLOC 48
/* The GC header before a GC object (no pre-header for these exact types on
 * 3.12 and 3.13: they have neither a managed dict nor managed weakrefs),
 * then the object's count and type. */
#define GC_HEAD 16
#define BLOCK_TYPE_WORD 3

#define WATCH_MAX 8
static destructor_fn real_dealloc[WATCH_MAX];
static const void *watched[WATCH_MAX];
static unsigned nwatched;
/* The lowest watched type, and the span to the highest: the types are
 * CPython's static ones, a few KiB apart, and most objects a collection
 * frees are of classes (heap types): one compare tells them, not one per
 * watched type (12 instructions of each such free). */
static uintptr_t watched_lo, watched_span;
static int read_types;      /* objects' blocks are in pymalloc's pools */
static int look_at_types;   /* read_types, with a type watched: one test a free, not two */

/* The block whose deallocation runs on this thread (innermost), and
 * whether the allocator has seen it given back: together, so that one
 * address (a load from the GOT) serves both. */
typedef struct dying_now { const void *block; int given_back; } dying_now;
static __thread __attribute__((tls_model("initial-exec"))) dying_now dying_here;

/* Blocks whose death this collection recorded while they stayed out of
 * the allocator's hands: on a free list, or put off by the trashcan (a
 * deallocation nested too deep runs again later, through the wrapper).
 * Direct-mapped, each entry stamped with its collection: a lost entry only
 * costs a free recorded twice (the report counts the second as a block of
 * unknown site), never a wrong one. */
#define PENDING 4096
typedef struct pending { const void *block; uint64_t window; } pending;
static pending pendings[PENDING];

static pending *pending_slot(const void *block)
{
    uintptr_t h = (uintptr_t)block >> 4;
    h ^= h >> 12;
    return &pendings[h & (PENDING - 1)];
}

static void pending_put(const void *block, uint64_t window)
{
    *pending_slot(block) = (pending){ .block = block, .window = window };
}

/* Whether block was pending in this collection (and no longer is).  The
 * collection's window is looked up only for a block in its slot: most
 * blocks are not, and the lookup (the thread's mapping, its innermost
 * collection) was 10 of the instructions of each free that asks. */
static inline int pending_take(const void *block)
{
    pending *p = pending_slot(block);
    if (p->block != block)
        return 0;
    uint64_t window = python_gc_window();
    if (p->window != window || !window)
        return 0;
    p->block = NULL;
    return 1;
}

/* Is the object in block one of the watched types?  Its type word is read
 * only when objects come from pymalloc's pools (a smaller block's word is
 * then in the pool: read_types).  A block in its page's last 32 bytes has
 * its type word in the next page, which may not be mapped (the last block
 * of an arena, 16 bytes): the word is copied through the kernel there
 * (readable_gather: a page that cannot be read is a failed copy, never a
 * fault), and a block whose word cannot be read is no watched object (the
 * smallest is 48 bytes, whose next page is its own).  Taken as not watched
 * without a look, a list or dict that died by its count long before and
 * waited on its free list in a page's last 16 bytes (pools span several
 * pages from 3.10 on: a 64-byte class has such a block in every page) was
 * counted as collected by the collection that emptied the list. */
static int watched_block(const void *block)
{
    const void *const *at = (const void *const *)block + BLOCK_TYPE_WORD;
    const void *type;
    if (__builtin_expect(((uintptr_t)block & 4095) > 4096 - (BLOCK_TYPE_WORD + 1) * sizeof(void *), 0)) {
        readable_piece word = { .dst = &type, .src = at, .len = sizeof type };
        if (readable_gather(&word, 1) != 1)
            return 0;
    } else {
        type = *at;
    }
    if ((uintptr_t)type - watched_lo > watched_span)
        return 0;
    for (unsigned i = 0; i < nwatched; i++)
        if (type == watched[i])
            return 1;
    return 0;
}

static void dying(unsigned i, void *op)
{
    /* Subtypes' instances never go to the base type's free list, and may
     * have more before their GC header (3.12+): the allocator's view is
     * right for them. */
    if (((void *const *)op)[1] != watched[i]) {
        real_dealloc[i](op);
        return;
    }
    const void *block = (const char *)op - GC_HEAD;
    dying_now outer = dying_here;
    dying_here = (dying_now){ .block = block, .given_back = 0 };
    real_dealloc[i](op);
    int given_back = dying_here.given_back;
    dying_here = outer;
    if (given_back)
        return;         /* recorded (or not) as any free, python_alloc.c */
    if (pending_take(block))
        return;         /* the trashcan's second call: its death is recorded */
    if (python_alloc_record_collected(block))
        pending_put(block, python_gc_window());
}

#define WRAPPER(i)                                                   \
    static void dealloc_##i(void *op)                                \
    {                                                                \
        if (__builtin_expect(!python_gc_collecting, 1))              \
            real_dealloc[i](op);                                     \
        else                                                         \
            dying(i, op);                                            \
    }
WRAPPER(0) WRAPPER(1) WRAPPER(2) WRAPPER(3) WRAPPER(4) WRAPPER(5) WRAPPER(6) WRAPPER(7)
static const destructor_fn wrappers[WATCH_MAX] = { dealloc_0, dealloc_1, dealloc_2, dealloc_3,
                                                   dealloc_4, dealloc_5, dealloc_6, dealloc_7 };
#undef WRAPPER

int free_lists_left_out(const void *block)
{
    if (block == dying_here.block) {
        dying_here.given_back = 1;
        return pending_take(block);
    }
    if (!look_at_types || !watched_block(block))
        return 0;
    pending_take(block);
    return 1;
}

static void watch(const char *symbol, const char *name)
{
    char *type = py_sym(symbol);
    if (!type || nwatched == WATCH_MAX)
        return;
    const char *tp_name = *(const char *const *)(type + TYPE_NAME);
    if (!tp_name || strcmp(tp_name, name) != 0)
        return;   /* not the layout every offset here rests on */
    destructor_fn *slot = (destructor_fn *)(type + TYPE_DEALLOC);
    destructor_fn now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    unsigned i = nwatched;
    for (unsigned j = 0; j < nwatched; j++)
        if (watched[j] == type)
            return;     /* an embedder's next round: the types are static */
    if (!now || now == wrappers[i])
        return;
    real_dealloc[i] = now;
    watched[i] = type;
    uintptr_t t = (uintptr_t)type, lo = t, hi = t;
    if (nwatched) {
        lo = watched_lo < t ? watched_lo : t;
        hi = watched_lo + watched_span > t ? watched_lo + watched_span : t;
    }
    watched_lo = lo;
    watched_span = hi - lo;
    nwatched++;
    __atomic_store_n(slot, wrappers[i], __ATOMIC_RELEASE);
}

void free_lists_install(int in_pools)
{
    read_types = in_pools;
    watch("PyTuple_Type", "tuple");
    watch("PyList_Type", "list");
    watch("PyDict_Type", "dict");
    watch("PyContext_Type", "Context");
    watch("_PyAsyncGenASend_Type", "async_generator_asend");
    if (py.minor <= 10)
        watch("PyFrame_Type", "frame");
    if (py.minor == 8) {
        watch("PyMethod_Type", "method");
        watch("PyCFunction_Type", "builtin_function_or_method");
    }
    look_at_types = read_types && nwatched;
}
