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
 * address falls inside one of them is not recorded, nor one inside
 * _PyObject_New or _PyObject_NewVar, which make objects of types without
 * GC only (nongc_allocators below).  Everything else is:
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
#include "python_api.h"

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
 * its type's tp_alloc, elsewhere).  Objects of the range types, none a GC
 * object either, are plain too: their type word says so at their free, and
 * a site making only them is learnt as plain.  A shared libpython makes them
 * in _PyObject_New (left out by name, below); a build with link-time
 * optimisation inlines it into their constructors, whose sites are then
 * learnt (Debian's static python3.11).  The first NREQUIRED must be found;
 * the others are kept where found and PyType_GetFlags says they have no GC
 * (checked, not assumed, for versions to come). */
static const char *const plain_types[] = { "PyUnicode_Type", "PyLong_Type", "PyFloat_Type",
                                           "PyBytes_Type", "PyRange_Type", "PyRangeIter_Type",
                                           "PyLongRangeIter_Type" };
#define NREQUIRED 4
#define NTYPES (sizeof plain_types / sizeof plain_types[0])
#define TPFLAGS_HAVE_GC (1ul << 14)    /* Py_TPFLAGS_HAVE_GC, 3.0 to 3.13 */
static const void *types[NTYPES];
static unsigned ntypes;
/* The lowest of them and the span to the highest (python_alloc_sites.h):
 * a GC header's second word (a heap pointer, most of a collection's
 * frees) falls outside at once. */
uintptr_t py_alloc_plain_lo, py_alloc_plain_span;

/* The allocators that make GC objects, or objects of any type they are
 * given: a call site in them is never learnt (below). */
static const char *const general_allocators[] = {
    "PyType_GenericAlloc", "_PyType_AllocNoTrack", "_PyObject_GC_Malloc", "_PyObject_GC_Calloc",
    "_PyObject_GC_New", "_PyObject_GC_NewVar", "_PyObject_GC_Resize",
    "PyUnstable_Object_GC_NewWithExtraData",
};
/* PyObject_New and PyObject_NewVar: objects of any type without
 * Py_TPFLAGS_HAVE_GC, never a GC object (a GC type's object needs the GC
 * header these do not allocate; PyObject_GC_Track on one would write
 * before its block).  CPython makes range objects and their iterators this
 * way, and so do extensions for their types without GC: a tenth of
 * bench/workloads/churn_cycles' and threaded's object allocations were
 * theirs (3.11).  Their type is none of the four plain ones, so
 * their free cannot say it was left out: their blocks are marked, as dict
 * key tables' are (PY_ALLOC_V_NOTOBJ). */
static const char *const nongc_allocators[] = { "_PyObject_New", "_PyObject_NewVar" };
/* Blocks that are no objects at all: a bytearray's buffer comes from
 * PyObject_Malloc and PyObject_Realloc, in these two (every way CPython
 * sizes a bytearray goes through PyByteArray_Resize).  Buffers of any size
 * were recorded as GC objects (their bytes, zeros often, look like a GC
 * header to the learning below), and their frees in a collection as
 * objects it freed: a bytearray kept by a cycle counted twice, its buffer's
 * bytes among the objects.  Marked, as _PyObject_New's blocks are. */
static const char *const buffer_allocators[] = { "PyByteArray_FromStringAndSize", "PyByteArray_Resize" };
#define NPLAIN (sizeof plain_allocators / sizeof plain_allocators[0])
#define NGENERAL (sizeof general_allocators / sizeof general_allocators[0])
#define NNONGC (sizeof nongc_allocators / sizeof nongc_allocators[0])
#define NBUFFER (sizeof buffer_allocators / sizeof buffer_allocators[0])

typedef struct range { uintptr_t start, end; uint64_t state; } range;
static range ranges[NPLAIN + NGENERAL + NNONGC + NBUFFER];
static unsigned nranges, nplain, nnongc, nbuffer;

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
 * py_alloc_block_plain), is left out from then on (V_PLAIN).  One whose
 * first LEARN_AFTER blocks were all plain objects or no objects at all
 * (block_not_object: dict key tables, a third of the object domain's
 * allocations in a program of small dicts) is left out too, its blocks
 * marked (V_NOTOBJ): their frees cannot tell, and a collection's frees of
 * marked blocks are left out (block_marks.h).  A site that made anything
 * else is recorded for good.  A single call instruction that made 48 exact
 * strs or ints (or key tables) and later makes a GC object would need a
 * general allocator of its own, handed the str type: CPython's are named
 * above and never learnt.  Off in a free-threaded build (no GIL keeps a block whole between
 * the look at the count of frees and the look at the block).
 */
#define LEARN_AFTER 48

/* Verdicts (python_alloc_sites.h): return address << V_SHIFT | state; 0 is
 * an empty slot.  While a site is learnt, its state counts the blocks seen
 * (none a GC object) and says whether one of them was not an object. */
#define V_PLAIN PY_ALLOC_V_PLAIN
#define V_GENERAL PY_ALLOC_V_GENERAL
#define V_NOTOBJ PY_ALLOC_V_NOTOBJ
#define V_DECIDED PY_ALLOC_V_DECIDED
#define V_SHIFT PY_ALLOC_V_SHIFT
#define V_SAW_NOTOBJ 8u   /* learning: a block that is not an object was seen */
#define V_SEEN 16u        /* learning: blocks seen, in the bits above V_SAW_NOTOBJ */
#define V_STATE ((1u << V_SHIFT) - 1)
_Static_assert(LEARN_AFTER < V_STATE / V_SEEN, "the count fits its bits");
#define VERDICTS PY_ALLOC_VERDICTS
_Atomic uint64_t py_alloc_verdicts[VERDICTS];
static int learning;
_Atomic uint64_t py_alloc_frees;              /* OBJ-domain frees and reallocs, every thread */
#define TLS __thread __attribute__((tls_model("initial-exec")))
TLS const void *py_alloc_pending;             /* a block to look at, made at pending_site */
static TLS uintptr_t pending_site;
static TLS _Atomic uint64_t *pending_slot;    /* where pending_site's verdict was */
static TLS uint64_t pending_frees;            /* py_alloc_frees when it was made */
static TLS size_t pending_size;               /* its size: the words that may be read */

static int add_range(const char *name, uint64_t state)
{
    void *fn = py_sym(name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || info.dli_saddr != fn ||
        sym->st_size == 0 || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
        return 0;
    ranges[nranges++] = (range){ .start = (uintptr_t)fn, .end = (uintptr_t)fn + sym->st_size,
                                 .state = state };
    return 1;
}

unsigned py_alloc_sites_install(int may_learn)
{
    nranges = nplain = nnongc = nbuffer = 0;
    ntypes = 0;
    unsigned long (*get_flags)(const void *);
    *(void **)&get_flags = py_sym("PyType_GetFlags");
    for (unsigned i = 0; i < NTYPES; i++) {
        const void *t = py_sym(plain_types[i]);
        if (i < NREQUIRED && !t)
            return 0;   /* frees could not be told apart: leave nothing out */
        if (i < NREQUIRED || (t && get_flags && !(get_flags(t) & TPFLAGS_HAVE_GC)))
            types[ntypes++] = t;
    }
    uintptr_t types_lo = UINTPTR_MAX, types_hi = 0;
    for (unsigned i = 0; i < ntypes; i++) {
        types_lo = (uintptr_t)types[i] < types_lo ? (uintptr_t)types[i] : types_lo;
        types_hi = (uintptr_t)types[i] > types_hi ? (uintptr_t)types[i] : types_hi;
    }
    py_alloc_plain_lo = types_lo;
    py_alloc_plain_span = types_hi - types_lo;
    for (unsigned i = 0; i < NPLAIN; i++)
        nplain += (unsigned)add_range(plain_allocators[i], V_PLAIN);
    for (unsigned i = 0; i < NGENERAL; i++)
        add_range(general_allocators[i], V_GENERAL);
    for (unsigned i = 0; i < NNONGC; i++)
        nnongc += (unsigned)add_range(nongc_allocators[i], V_NOTOBJ);
    for (unsigned i = 0; i < NBUFFER; i++)
        nbuffer += (unsigned)add_range(buffer_allocators[i], V_NOTOBJ);
    for (unsigned i = 0; i < VERDICTS; i++)
        atomic_store_explicit(&py_alloc_verdicts[i], 0, memory_order_relaxed);
    learning = nplain && may_learn;
    if (!nplain)
        nranges = nnongc = nbuffer = 0;
    return nplain;
}

unsigned py_alloc_sites_nongc(void)
{
    return nnongc;
}

unsigned py_alloc_sites_buffers(void)
{
    return nbuffer;
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
int py_alloc_type_plain(const void *type)
{
    if (!nplain)
        return 0;
    for (unsigned i = 0; i < ntypes; i++)
        if (type == types[i])
            return 1;
    return 0;
}

/*
 * Whether a block made at a site being learnt holds no object at all, GC or
 * not: a dict key table (3.8 to 3.12 make them in the object domain, from
 * static functions: new_keys_object, clone_combined_dict_keys), whose first
 * word is its reference count and whose second holds its sizes (3.8-3.10:
 * the slot count; 3.11-3.12: in bytes, the log2 of the slot count, the log2
 * of the index's bytes, the kind, a pad byte, then a version: 0 in a new
 * table, its source's in a copy of a table the specialiser watched).  The
 * first word is a small count, 1 to 255: a GC object's block starts with its
 * GC header's link to the next one, 0 or a pointer (a collection tags
 * pointers in the low bit), or from 3.12 with a pre-header whose words are
 * pointers (one perhaps tagged) or 0, never with such a count.  The second
 * word is not a type object's address, which an object without a GC header
 * has there after its reference count: below 4096, where nothing is mapped,
 * or not 8-aligned, or (a 3.11 table of 256 slots, 2^16...) the exact shape
 * of a table's sizes under 4 GiB, which a type's address would match by
 * chance about once in 30,000 (and a site is learnt from 48 blocks in a
 * row).  A table of any version, or a 3.8-3.10 one of 4096 slots or more
 * (its count a power of two, 8-aligned), is told by its next words too:
 * the room left and the entries used add up to exactly two thirds of the
 * slots (USABLE_FRACTION), which an object's fields after a type that looks
 * like a table's sizes would match by no more than chance.  And a table
 * whose count is 0 already: the look can come while it is being freed (a
 * copy made and dropped, its entries released before the table, each
 * release a call of our wrapper), when a count of 0 is also what a fresh GC
 * object's header starts with, so there the counts must match.  Missing
 * one made its site recorded for good, and every table it made counted
 * among the objects collections freed (a copy of sys.modules, 100 KiB, in
 * each of PyTorch's optimizer constructions).
 */
/* A table's shape with its counts: two thirds of its slots are the room
 * left and the entries used, exactly. */
static int table_counts(const uint64_t *w, size_t size)
{
    uint64_t t = w[1];
    unsigned log2_size = t & 0xff, log2_index = t >> 8 & 0xff, kind = t >> 16 & 0xff;
    if (log2_size >= 3 && log2_size < 48 && log2_index - log2_size <= 3 && kind <= 2 &&
        size >= 4 * sizeof(uint64_t) && w[2] + w[3] == ((uint64_t)2 << log2_size) / 3)
        return 1;                                   /* 3.11-3.12 */
    /* 3.8-3.10: the slot count, then the lookup function, the room left
     * and the entries used */
    return t >= 8 && (t & (t - 1)) == 0 && size >= 5 * sizeof(uint64_t) && w[3] + w[4] == (t << 1) / 3;
}

static int block_not_object(const void *block, size_t size)
{
    const uint64_t *w = block;
    if (w[0] == 0)
        return table_counts(w, size);   /* being freed, see above */
    if (w[0] - 1 >= 255)
        return 0;
    uint64_t t = w[1];
    if (t < 4096 || (t & 7) != 0)
        return 1;
    unsigned log2_size = t & 0xff, log2_index = t >> 8 & 0xff, kind = t >> 16 & 0xff;
    if (t >> 32 == 0 && log2_size >= 3 && log2_index - log2_size <= 3 && kind <= 2)
        return 1;                       /* 3.11-3.12, a new table */
    return table_counts(w, size);
}

/* The state a new site starts with: from the named ranges, else learning
 * (or recorded for good when learning is off). */
static uint64_t first_state(uintptr_t ra)
{
    /* A return address is one past its call: the call is at ra - 1 (a call
     * that ends a function returns to the next one's first byte). */
    for (unsigned i = 0; i < nranges; i++)
        if (ra - 1 >= ranges[i].start && ra - 1 < ranges[i].end)
            return ranges[i].state;
    return learning ? 0 : V_GENERAL;
}

/*
 * A site's slot: the first of PROBES slots from its home slot that holds
 * it, else the first empty one, else (the window full of other sites) the
 * home slot, taken from its site, which starts again from first_state when
 * it comes back.  The wrapper's inline look-up tries the home slot alone.
 * With one slot per site (before), two sites whose addresses hashed alike
 * took it from each other at every allocation, and neither was ever
 * learnt: which ones collided changed with where the libraries were
 * loaded, so one run of a program left dict key tables out and the next
 * recorded 1,900 of them (3.10, 15 stdlib imports, about one run in two).
 */
#define PROBES 4
static _Atomic uint64_t *slot_of(uintptr_t ra)
{
    uint32_t home = py_alloc_verdict_slot(ra);
    _Atomic uint64_t *empty = NULL;
    for (uint32_t i = 0; i < PROBES; i++) {
        _Atomic uint64_t *slot = &py_alloc_verdicts[(home + i) & (VERDICTS - 1)];
        uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
        if (v >> V_SHIFT == ra)
            return slot;
        if (!v && !empty)
            empty = slot;
    }
    return empty ? empty : &py_alloc_verdicts[home];
}

unsigned py_alloc_site_verdict_slow(uintptr_t ra, const void *block, size_t size)
{
    if (!nplain || !ra || (uint64_t)ra >> (64 - V_SHIFT))
        return 0;
    _Atomic uint64_t *slot = slot_of(ra);
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> V_SHIFT != ra) {
        v = (uint64_t)ra << V_SHIFT | first_state(ra);
        atomic_store_explicit(slot, v, memory_order_relaxed);
    }
    if (v & (V_PLAIN | V_NOTOBJ))
        return (unsigned)v & (V_PLAIN | V_NOTOBJ);
    if (!(v & V_GENERAL) && learning) {
        py_alloc_pending = block;
        pending_site = ra;
        pending_slot = slot;
        pending_size = size;
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
    _Atomic uint64_t *slot = pending_slot;
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> V_SHIFT != pending_site || v & V_DECIDED)
        return;   /* the slot went to another site meanwhile: learnt again later */
    int plain = py_alloc_block_plain(block);
    if (!plain && !block_not_object(block, pending_size)) {
        v |= V_GENERAL;
    } else {
        uint64_t saw = (v & V_SAW_NOTOBJ) | (plain ? 0 : V_SAW_NOTOBJ);
        uint64_t seen = (v & V_STATE) / V_SEEN + 1;
        v = (v & ~(uint64_t)V_STATE) |
            (seen >= LEARN_AFTER ? (saw ? V_NOTOBJ : V_PLAIN) : seen * V_SEEN | saw);
    }
    atomic_store_explicit(slot, v, memory_order_relaxed);
}
