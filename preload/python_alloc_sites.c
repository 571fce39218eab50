/*
 * python_alloc_sites.c - object allocations that cannot be GC objects, told
 * by the function that asked for them.
 *
 * TRACE_PY_ALLOCS is about the objects the collector deals with (GC
 * objects: containers, instances, functions, frames...).  The OBJ domain
 * sees far more: every str, int, float and bytes, and most allocations of a
 * text- or number-heavy program are those (97 % of bench/workloads/dict_str,
 * 65 % of json_work).  Recording them with their Python stacks was most of
 * what this mode cost, for events no report about the collector uses.
 *
 * The domain's malloc is called with nothing but a size.  What tells a GC
 * object apart is who called PyObject_Malloc: in a shared libpython,
 * PyObject_Malloc/Calloc/Realloc end in a tail jump through the domain's
 * table, so our wrapper returns straight into their caller, and
 * __builtin_return_address(0) lies in that caller's code.  Some callers
 * only ever make objects of types without Py_TPFLAGS_HAVE_GC; the list below
 * names exported CPython functions whose own calls to the object allocator
 * (theirs and those of anything inlined into them) make only such objects:
 * str (PyUnicode_New), int (_PyLong_New and the PyLong_From* / arithmetic
 * entry points, which inline it), float and bytes.  What else they call either
 * lives in another file (not inlined without link-time optimisation) or
 * makes its objects through a type's slot (an indirect call: exceptions on
 * their error paths); with link-time optimisation only a cold error path
 * could inline a GC allocation into them.  An allocation whose return
 * address falls inside one of them is not recorded.  Everything else is:
 * the GC allocators, PyType_GenericAlloc (instances of both kinds), static
 * functions (dict key tables, str resizes), extension code, and every
 * allocation where PyObject_Malloc does not tail-jump (a statically linked
 * interpreter built with LTO inlines pymalloc into it: there the return
 * address is always PyObject_Malloc's own, found in no range, and every
 * object allocation is recorded as before).  So the filter can only leave
 * out what is certainly not a GC object: a wrong guess costs an extra event,
 * never a missing one.
 *
 * Ranges come from dlsym and the dynamic symbol's size (dladdr1), once, at
 * install (with the GIL, outside any allocator hook: dladdr takes the
 * loader's lock).  A function the dynamic symbol table does not size (or
 * that resolves elsewhere than its definition, as a non-PIE executable's
 * canonical PLT entry) is left out.  The hook asks a direct-mapped cache of
 * verdicts keyed by return address (a few hundred distinct call sites in a
 * program), one relaxed 64-bit word each: the wrappers run with the GIL,
 * but an interpreter with its own GIL (3.12+) may race, and a torn verdict
 * is impossible when the word is the verdict.
 */
#include "python_alloc_sites.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>

static const char *const plain_allocators[] = {
    /* str: PyUnicode_New, and the exported entry points a build with
     * link-time optimisation inlines it into (Debian's static python3.11
     * makes four fifths of its strs in the next ones) */
    "PyUnicode_New", "PyUnicode_Concat", "_PyUnicode_FromASCII", "PyUnicode_FromStringAndSize",
    "PyUnicode_FromString", "PyUnicode_Substring", "PyUnicode_FromKindAndData",
    "_PyUnicode_JoinArray",
    "_PyLong_New", "_PyLong_Copy", "_PyLong_Add", "_PyLong_Subtract", "_PyLong_Multiply",
    "PyLong_FromLong", "PyLong_FromUnsignedLong", "PyLong_FromLongLong",
    "PyLong_FromUnsignedLongLong", "PyLong_FromSsize_t", "PyLong_FromSize_t",
    "PyFloat_FromDouble",
    "PyBytes_FromStringAndSize", "PyBytes_FromString", "_PyBytes_Resize",
};
/* What they make: exactly these types (a subclass's instance is made by
 * its type's tp_alloc, elsewhere). */
static const char *const plain_types[] = { "PyUnicode_Type", "PyLong_Type", "PyFloat_Type",
                                           "PyBytes_Type" };
#define NTYPES (sizeof plain_types / sizeof plain_types[0])
static const void *types[NTYPES];

/* The allocators that make GC objects, or objects of any type they are
 * given: a call site in them is never learnt (below). */
static const char *const general_allocators[] = {
    "PyType_GenericAlloc", "_PyType_AllocNoTrack", "_PyObject_GC_Malloc", "_PyObject_GC_Calloc",
    "_PyObject_GC_New", "_PyObject_GC_NewVar", "_PyObject_GC_Resize",
    "PyUnstable_Object_GC_NewWithExtraData", "_PyObject_New", "_PyObject_NewVar",
};
#define NPLAIN (sizeof plain_allocators / sizeof plain_allocators[0])
#define NGENERAL (sizeof general_allocators / sizeof general_allocators[0])

typedef struct range { uintptr_t start, end; int plain; } range;
static range ranges[NPLAIN + NGENERAL];
static unsigned nranges, nplain;

/*
 * Call sites no name covers (static functions: int arithmetic in 3.11 and
 * 3.12, str resizes; everything in a stripped static interpreter) are
 * learnt: while a site is new, its allocations are recorded, and at the
 * thread's next call of the wrapper the object made in the block is looked
 * at, unless an OBJ-domain block was freed meanwhile by any thread (the
 * block might be gone, and its arena unmapped).  The thread holds its
 * interpreter's GIL from the allocation to its next call, apart from
 * switches to other threads, whose frees count; another interpreter's
 * threads cannot free this interpreter's new object.  A site
 * whose first LEARN_AFTER objects were all of the four plain types, exactly
 * (the type word of a non-GC object's block, never a GC header's: see
 * py_alloc_block_plain), is left out from then on; one that made anything
 * else is recorded for good.  A single call instruction that made 48 exact
 * strs or ints and later makes a GC object would need a general allocator
 * of its own, handed the str type: CPython's are named above and never
 * learnt.  Off in a free-threaded build (no GIL keeps a block whole between
 * the look at the count of frees and the look at the block).
 */
#define LEARN_AFTER 48

/* Verdicts (python_alloc_sites.h): return address << 8 | state; 0 is an
 * empty slot. */
#define V_PLAIN PY_ALLOC_V_PLAIN
#define V_GENERAL PY_ALLOC_V_GENERAL
#define V_SEEN 4u         /* plain objects seen from it, in the bits above V_GENERAL */
#define V_SEEN_MAX 63u
#define VERDICTS PY_ALLOC_VERDICTS
_Atomic uint64_t py_alloc_verdicts[VERDICTS];
static int learning;
_Atomic uint64_t py_alloc_frees;              /* OBJ-domain frees and reallocs, every thread */
#define TLS __thread __attribute__((tls_model("initial-exec")))
TLS const void *py_alloc_pending;             /* a block to look at, made at pending_site */
static TLS uintptr_t pending_site;
static TLS uint64_t pending_frees;            /* py_alloc_frees when it was made */

static int add_range(const char *name, int plain)
{
    void *fn = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || info.dli_saddr != fn ||
        sym->st_size == 0 || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
        return 0;
    ranges[nranges++] = (range){ .start = (uintptr_t)fn, .end = (uintptr_t)fn + sym->st_size,
                                 .plain = plain };
    return 1;
}

unsigned py_alloc_sites_install(int may_learn)
{
    nranges = nplain = 0;
    for (unsigned i = 0; i < NTYPES; i++)
        if (!(types[i] = dlsym(RTLD_DEFAULT, plain_types[i])))
            return 0;   /* frees could not be told apart: leave nothing out */
    for (unsigned i = 0; i < NPLAIN; i++)
        nplain += (unsigned)add_range(plain_allocators[i], 1);
    for (unsigned i = 0; i < NGENERAL; i++)
        add_range(general_allocators[i], 0);
    for (unsigned i = 0; i < VERDICTS; i++)
        atomic_store_explicit(&py_alloc_verdicts[i], 0, memory_order_relaxed);
    learning = nplain && may_learn;
    if (!nplain)
        nranges = 0;
    return nplain;
}

/*
 * The frees a collection makes are recorded (py_free) and matched, by
 * address, to the latest py_alloc there.  A str the filter left out may sit
 * where a recorded GC object lived before (freed outside any collection,
 * which is not recorded): its free inside a collection would be charged to
 * that object's site.  So such frees are left out too: the block of an
 * object of one of the four types starts with the object itself, and its
 * second word is the type.  A GC object's block starts with its GC header
 * (and from 3.12 may have a dict and weak-reference pre-header before it),
 * whose second word is a link to another header, flags, or a heap pointer:
 * never one of these static type objects.  The block is still whole (the
 * wrapper reads it before the free goes on), and every object block is at
 * least 16 bytes.
 */
int py_alloc_block_plain(const void *block)
{
    if (!nplain)
        return 0;
    const void *type = ((const void *const *)block)[1];
    for (unsigned i = 0; i < NTYPES; i++)
        if (type == types[i])
            return 1;
    return 0;
}

/* The state a new site starts with: from the named ranges, else learning
 * (or recorded for good when learning is off). */
static uint64_t first_state(uintptr_t ra)
{
    /* A return address is one past its call: the call is at ra - 1 (a call
     * that ends a function returns to the next one's first byte). */
    for (unsigned i = 0; i < nranges; i++)
        if (ra - 1 >= ranges[i].start && ra - 1 < ranges[i].end)
            return ranges[i].plain ? V_PLAIN : V_GENERAL;
    return learning ? 0 : V_GENERAL;
}

int py_alloc_site_plain_slow(uintptr_t ra, const void *block)
{
    if (!nplain || !ra)
        return 0;
    _Atomic uint64_t *slot = &py_alloc_verdicts[py_alloc_verdict_slot(ra)];
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> 8 != ra) {
        v = (uint64_t)ra << 8 | first_state(ra);
        atomic_store_explicit(slot, v, memory_order_relaxed);
    }
    if (v & V_PLAIN)
        return 1;
    if (!(v & V_GENERAL) && learning) {
        py_alloc_pending = block;
        pending_site = ra;
        pending_frees = atomic_load_explicit(&py_alloc_frees, memory_order_relaxed);
    }
    return 0;
}

void py_alloc_sites_learn(void)
{
    const void *block = py_alloc_pending;
    py_alloc_pending = NULL;
    if (!learning || atomic_load_explicit(&py_alloc_frees, memory_order_relaxed) != pending_frees)
        return;
    _Atomic uint64_t *slot = &py_alloc_verdicts[py_alloc_verdict_slot(pending_site)];
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> 8 != pending_site || v & (V_PLAIN | V_GENERAL))
        return;   /* the slot went to another site meanwhile: learnt again later */
    if (!py_alloc_block_plain(block)) {
        v |= V_GENERAL;
    } else {
        uint64_t seen = (v & 0xff) / V_SEEN + 1;
        v = (v & ~(uint64_t)0xff) | (seen >= LEARN_AFTER ? V_PLAIN : seen * V_SEEN);
    }
    atomic_store_explicit(slot, v, memory_order_relaxed);
}
