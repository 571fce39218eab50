/*
 * python_gc.c - a gc_start/gc_stop pair for every cyclic-GC collection.
 *
 * A C-implemented callable appended to gc.callbacks receives ("start", info)
 * and ("stop", info) on every version from 3.8.  It runs inside the collector,
 * so it must not allocate a Python object (that could start the very thing we
 * are recording, or disturb the collection): the phase is compared in place,
 * the info dict is read with keys interned at attach time, and it returns the
 * None singleton.  gc_start opens an operation, so whatever is recorded while
 * the collection runs (finalizers freeing pooled GPU memory, large buffers
 * released) is nested under it.
 *
 * gc.callbacks is per interpreter, and so are collections: every interpreter
 * (the main one, and each subinterpreter once its import system runs) gets a
 * callable of its own whose `self` is its slot here, which holds that
 * interpreter's open collection and counters.  Interpreters with a GIL of
 * their own (3.12+) collect concurrently on different threads, so nothing is
 * shared between slots, not even the dict keys (the info dict is walked with
 * PyDict_Next and its keys compared in place).  gc_start carries the
 * interpreter's id.
 *
 * A thread-local depth says when a collection runs on this thread, for
 * python_alloc.c's py_free events.  Not every free in that window is the
 * collection's: the objects the interpreter built to call the callbacks
 * (the info dict, its key strings and keys table, and the phase string;
 * ours is called the fast way, with no arguments tuple) are freed as our
 * "start" returns.  on_start notes their
 * blocks, and the first free of each is passed over.
 *
 * A collection's "stop" may never reach us: CPython calls gc.callbacks by
 * index, so a callback before ours that removes itself in "stop" makes the
 * list skip ours, and a finalizer the collection runs may empty the list.
 * Left open, the collection would take in every later event of the thread
 * (a buffer freed by reference counting reported as freed by the
 * collector: the false finding this tool must not make).  So the
 * interpreter's own flag, gc.collecting (set around the callbacks and the
 * collection, cleared after the "stop" callbacks), is read before each
 * event recorded while a collection is open (rec_set_open_check) and at
 * each object free counted as the collection's; once it reads 0 the
 * collection is closed there, with a gc_stop whose counts and duration are
 * unknown (0), and a "start" on an interpreter whose collection is still
 * open closes that one first (collections of an interpreter do not nest).
 * The flag's offset is derived from the young count's (PY_GC_*) and trusted only once seen to read 0 outside a
 * collection and 1 inside one; until then (or if it ever reads otherwise
 * in a callback) only a "start" closes a stale collection.
 *
 * gc_start also carries, per generation, the GC-tracked allocations since
 * that generation was last collected.  We read the interpreter's own young
 * count (generations[0].count: GC objects allocated minus those freed since
 * the previous collection, the number that triggers collections) at each
 * gc_start and sum it up per generation, so nothing runs per allocation.
 */
#include "python_internal.h"
#include "python_layout.h"
#include "recorder.h"
#include "thread_mem.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define MAX_INTERPRETERS 64

/* Collections are serialised within an interpreter (one at a time, under its
 * GIL), so one open collection per interpreter is all there is to remember. */
typedef struct gc_slot {
    _Atomic int64_t interp;            /* interpreter id + 1; 0: free */
    _Atomic uint64_t open_id;          /* the collection started, its stop not seen; 0: none */
    int32_t open_generation;
    uint64_t open_interp;              /* the interpreter its gc_start named */
    uint64_t start_ns;
    const volatile int *collecting;    /* the interpreter's gc.collecting, once known */
    const void *callable;              /* ours in its gc.callbacks (compared, never used) */
    _Atomic int said_removed;          /* not_watched written for its removal */
    uint64_t since_collected[3];       /* net GC allocations since gen g was collected */
} gc_slot;

static gc_slot slots[MAX_INTERPRETERS];
static _Atomic uint64_t open_ids;
/* Collections running on this thread: one, or more when a callback of an
 * interpreter's collection ends up collecting another one's; the first
 * OPEN_MAX of them, innermost last, each with its slot's open_id then
 * (another thread may find it ended: the entry is then stale) and the seq
 * of its gc_start (0: not recorded). */
#define TLS static __thread __attribute__((tls_model("initial-exec")))
__thread int python_gc_collecting __attribute__((tls_model("initial-exec")));
#define OPEN_MAX 8
/* tstate and frame: the thread's state and its innermost Python frame when
 * the collection started (NULL tstate: unknown). */
typedef struct open_gc { gc_slot *slot; uint64_t id, seq; const char *tstate; const void *frame; } open_gc;
#define PREAMBLE_MAX 8
/* In the thread's mapping (thread_mem.h), not in TLS.  A collection that
 * starts where it cannot be had (the mapping failed) is recorded but not
 * opened: nothing is counted as its. */
typedef struct gc_here {
    open_gc open[OPEN_MAX];
    const void *preamble[PREAMBLE_MAX];   /* blocks of the callback's arguments */
    /* A bit per preamble block (preamble_bit), cleared only by the next
     * note_preamble: every free in a collection asks whether its block is
     * one of them, and the eight compares were 40 instructions of a
     * recorded free's 360 (callgrind, churn_cycles 0.1 on 3.11); the bit's
     * test is 8, and lets about one block in ten through to the compares. */
    uint64_t preamble_bits;
    /* And a second bit per block, from another hash (preamble_bit2),
     * asked only where the first is set: of churn_cycles'
     * 131,000 recorded frees, 8,500 went on to the compares (their loop,
     * 0.5 M instructions in all), about one in a hundred with both. */
    uint64_t preamble_bits2;
} gc_here;
_Static_assert(sizeof(gc_here) <= THREAD_MEM_GC_BYTES, "thread_mem.h: python_gc's part");

/* This thread's, if it has a mapping (every thread with a collection
 * listed has). */
static inline gc_here *here_peek(void)
{
    thread_mem *m = thread_mem_peek();
    return m ? (gc_here *)m->gc : NULL;
}

/* The OBJ-domain block of a GC object (the GC header before it; tuples and
 * dicts have nothing else before it on 3.8-3.13), or of another object. */
#define GC_HEAD_SIZE 16
static const void *gc_block(const void *obj)
{
    return (const char *)obj - GC_HEAD_SIZE;
}

/* PyDictObject's ma_keys (public ABI, the same offset on 3.8-3.13): the
 * keys table, an OBJ-domain block of its own. */
#define DICT_MA_KEYS 32

/* A multiplicative hash's top 6 bits: the address's bits 4 to 9 alone let
 * through a third of churn_cycles' frees (a pool's blocks of one size hit
 * a few residues only). */
static inline uint64_t preamble_bit(const void *block)
{
    return (uint64_t)1 << (((uintptr_t)block * 0x9E3779B97F4A7C15ull) >> 58);
}

/* A second bit, from another multiplier's top bits: the same product's
 * next 6 bits were kept from the first test to the second, 3 instructions
 * more a free, as many as the compares they spared. */
static inline uint64_t preamble_bit2(const void *block)
{
    return (uint64_t)1 << (((uintptr_t)block * 0xC2B2AE3D27D4EB4Full) >> 58);
}

static void note_preamble(gc_here *h, py_object *phase, py_object *info)
{
    const void **preamble = h->preamble;
    int n = 0;
    preamble[n++] = phase;
    preamble[n++] = gc_block(info);
    preamble[n++] = *(void *const *)((const char *)info + DICT_MA_KEYS);
    ssize_t pos = 0;
    py_object *key, *value;
    while (n < PREAMBLE_MAX && py.PyDict_Next(info, &pos, &key, &value))
        preamble[n++] = key;
    uint64_t bits = 0, bits2 = 0;
    for (int i = 0; i < n; i++) {
        bits |= preamble_bit(preamble[i]);
        bits2 |= preamble_bit2(preamble[i]);
    }
    h->preamble_bits = bits;
    h->preamble_bits2 = bits2;
    while (n < PREAMBLE_MAX)
        preamble[n++] = NULL;
}

static void check_open(void);

uint64_t python_gc_window(void)
{
    int n = python_gc_collecting;
    gc_here *h = n > 0 && n <= OPEN_MAX ? here_peek() : NULL;
    return h ? h->open[n - 1].id : 0;
}

/* Whether this thread's innermost collection may still run: its flag
 * unknown or set (a few loads per free counted as a collection's; only a
 * 0 asks check_open). */
static inline int innermost_may_run(void)
{
    int n = python_gc_collecting;
    gc_here *h = here_peek();
    if (n > OPEN_MAX || !h)
        return 1;
    const volatile int *flag = h->open[n - 1].slot->collecting;
    return !flag || *flag;
}

static const py_layout *layout;

/* The thread's innermost Python frame (an interpreter frame from 3.11). */
static const void *frame_of(const char *tstate)
{
    if (layout->tstate_cframe != PY_NO_FIELD) {
        const char *cframe = *(const char *const *)(tstate + layout->tstate_cframe);
        return cframe ? *(const void *const *)(cframe + layout->cframe_frame) : NULL;
    }
    return *(const void *const *)(tstate + layout->tstate_frame);
}

/* 0 for a block of the collection's preamble (note_preamble), forgotten
 * then: the address may hold a collected object later. */
static inline int not_preamble(gc_here *h, const void *block)
{
    if (__builtin_expect(!(h->preamble_bits & preamble_bit(block)), 1) ||
        !(h->preamble_bits2 & preamble_bit2(block)))
        return 1;
    for (int i = 0; i < PREAMBLE_MAX; i++) {
        if (h->preamble[i] == block) {
            h->preamble[i] = NULL;
            return 0;
        }
    }
    return 1;
}

/* python_gc_frees_collected_slow's answer the long way: the innermost
 * collection not listed, or its flag says it ended. */
static __attribute__((noinline)) int frees_collected_checked(const void *block)
{
    if (!innermost_may_run()) {
        check_open();   /* a collection ended unseen frees nothing */
        if (!python_gc_collecting)
            return 0;
    }
    /* Python code the collection runs (a finalizer, a weakref callback)
     * frees what it drops by counts: a __del__ that empties a module's
     * cache freed objects no cycle held, 989 of them counted as collected
     * (helper).  The collector's own frees run with the frame it started
     * under. */
    int n = python_gc_collecting;
    gc_here *h = here_peek();
    if (!h)
        return 0;   /* given back at the thread's exit: nothing is the collection's */
    if (n <= OPEN_MAX && h->open[n - 1].tstate && frame_of(h->open[n - 1].tstate) != h->open[n - 1].frame)
        return 0;
    return not_preamble(h, block);
}

/* Every free while a collection runs on this thread: the innermost
 * collection, listed and running (its flag unknown or set), looked up
 * once, and frees_collected_checked's answer for it.  Through
 * innermost_may_run, the thread's mapping and the collection's entry were
 * looked up twice: 8 instructions a recorded free of churn_cycles. */
int python_gc_frees_collected_slow(const void *block)
{
    int n = python_gc_collecting;
    gc_here *h = here_peek();
    if (__builtin_expect(n > OPEN_MAX || !h, 0))
        return frees_collected_checked(block);
    const open_gc *o = &h->open[n - 1];
    const volatile int *flag = o->slot->collecting;
    if (__builtin_expect(flag && !*flag, 0))
        return frees_collected_checked(block);
    if (o->tstate && frame_of(o->tstate) != o->frame)
        return 0;
    return not_preamble(h, block);
}
static const char *runtime;            /* &_PyRuntime, for 3.8 */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* info[name], walked in place: no key object is made or shared. */
static int64_t info_field(py_object *info, const char *name)
{
    ssize_t pos = 0;
    py_object *key, *value;
    while (py.PyDict_Next(info, &pos, &key, &value)) {
        if (py.PyUnicode_CompareWithASCIIString(key, name) != 0)
            continue;
        ssize_t n = py.PyLong_AsSsize_t(value);
        if (n == -1 && py.PyErr_Occurred())
            py.PyErr_Clear();
        return n;
    }
    return -1;
}

/* Where the current interpreter's gc state is read from: its interpreter
 * state, or 3.8's _PyRuntime; NULL unknown. */
static const char *gc_base(void)
{
    if (layout->gc_in_runtime)
        return runtime;
    const char *tstate = py.current_tstate();   /* ours: the collector holds the GIL */
    return tstate ? *(const char *const *)(tstate + layout->tstate_interp) : NULL;
}

static uint64_t young_count(void)
{
    const char *base = gc_base();
    int count = base ? *(const int *)(base + layout->gc_young_count) : 0;   /* an int */
    return count > 0 ? (uint64_t)count : 0;
}

/* Whether the flag is read right: seen 0 outside a collection (at attach),
 * 1 in a callback, and never anything but 0 or 1. */
static _Atomic int flag_seen_zero, flag_seen_one, flag_wrong;

static int flag_trusted(void)
{
    return atomic_load_explicit(&flag_seen_zero, memory_order_relaxed) &&
           atomic_load_explicit(&flag_seen_one, memory_order_relaxed) &&
           !atomic_load_explicit(&flag_wrong, memory_order_relaxed);
}

/* The current interpreter's flag, or NULL. */
static const volatile int *collecting_flag(void)
{
    const char *base = layout ? gc_base() : NULL;
    return base ? (const volatile int *)(base + layout->gc_young_count + PY_GC_COLLECTING_FROM_YOUNG)
                : NULL;
}

/* Read at attach, outside any collection (as far as we know). */
static void flag_note_outside(void)
{
    const volatile int *flag = collecting_flag();
    int v = flag ? *flag : -1;
    if (v == 0)
        atomic_store(&flag_seen_zero, 1);
    else if (v != 1)
        atomic_store(&flag_wrong, 1);
}

/* In a callback: 0 when the trusted flag says no collection runs (our
 * callable called by hand, not by the collector), else 1. */
static int flag_in_collection(const volatile int *flag)
{
    int v = flag ? *flag : -1;
    if (v == 1) {
        atomic_store(&flag_seen_one, 1);
        return 1;
    }
    if (v == 0)
        return !flag_trusted();
    if (flag)
        atomic_store(&flag_wrong, 1);
    return 1;
}

static void allocation_counts(gc_slot *s, int generation, uint64_t allocs[3])
{
    if (!layout)
        return;
    uint64_t young = young_count();
    for (int g = 0; g < 3; g++) {
        s->since_collected[g] += young;
        allocs[g] = s->since_collected[g];
    }
    for (int g = 0; g <= generation && g < 3; g++)
        s->since_collected[g] = 0;
}

/* Entry i of this thread's list (i below python_gc_collecting and
 * OPEN_MAX) taken off, and its operation closed. */
static void drop_entry(int i)
{
    int n = python_gc_collecting;
    open_gc *open = here_peek()->open;   /* listed: mapped */
    uint64_t seq = open[i].seq;
    for (int j = i; j + 1 < n && j + 1 < OPEN_MAX; j++)
        open[j] = open[j + 1];
    python_gc_collecting = n - 1;
    if (seq)
        rec_close(seq);
}

/* This thread's entry of the slot's open collection, or -1. */
static int entry_of(const gc_slot *s)
{
    int n = python_gc_collecting < OPEN_MAX ? python_gc_collecting : OPEN_MAX;
    gc_here *h = here_peek();
    for (int i = n - 1; h && i >= 0; i--)
        if (h->open[i].slot == s && h->open[i].id == s->open_id)
            return i;
    return -1;
}

/* The slot's open collection is over: off this thread's list (when it is
 * there) and closed.  Past OPEN_MAX only the count goes down. */
static void close_open(gc_slot *s)
{
    int i = entry_of(s);
    if (i >= 0)
        drop_entry(i);
    else if (python_gc_collecting > OPEN_MAX)
        python_gc_collecting--;
    s->open_id = 0;
    s->start_ns = 0;
}

static py_object *interpreter_callbacks(void);

/* PyListObject, GIL builds of 3.8 to 3.13: ob_size, then ob_item. */
#define LIST_SIZE 16
#define LIST_ITEMS 24

/* Whether our callable is known gone from the interpreter's gc.callbacks
 * (a finalizer emptied it, say): read in place, and only by a thread
 * holding the GIL (gil_held: the caller knows it does, as the audit hook
 * does even while the interpreter finalises, when Py_IsInitialized says 0
 * already), outside a collection. */
static int removed_from_list(const gc_slot *s, int gil_held)
{
    py_object *list = s->callable && (gil_held || python_tstate_if_holding_gil()) ? interpreter_callbacks() : NULL;
    if (!list)
        return 0;
    ssize_t n = *(const ssize_t *)((const char *)list + LIST_SIZE);
    py_object *const *items = *(py_object *const *const *)((const char *)list + LIST_ITEMS);
    for (ssize_t i = 0; i < n; i++)
        if (items[i] == s->callable)
            return 0;
    return 1;
}

static void say_if_removed(gc_slot *s, int gil_held)
{
    if (!atomic_load(&s->said_removed) && removed_from_list(s, gil_held) &&
        !atomic_exchange(&s->said_removed, 1))
        rec_info("not_watched", "collections after the program emptied gc.callbacks: ours went with it");
}

/* A collection that ended without its "stop" reaching us: closed, and its
 * gc_stop recorded now, its counts and duration unknown. */
static void close_unfinished(gc_slot *s)
{
    static _Atomic int said;
    tf_event e = { .kind = TF_EV_GC_STOP };
    e.u.gc.generation = s->open_generation;
    e.u.gc.interp = s->open_interp;
    close_open(s);
    if (!atomic_exchange(&said, 1))
        rec_info("gc_stop_unseen", "a collection's stop callback never came (gc.callbacks changed "
                                   "during it): its gc_stop is recorded at the next event, with "
                                   "collected, uncollectable and duration 0 (unknown)");
    rec_event(&e, 0);
    say_if_removed(s, 0);
}

/* The collections open on this thread that have ended, closed: those
 * closed by another thread (stale entries) silently, those the trusted flag
 * says are over with their gc_stop (rec_set_open_check). */
static void check_open(void)
{
    gc_here *h = here_peek();
    while (h && python_gc_collecting > 0 && python_gc_collecting <= OPEN_MAX) {
        const open_gc *top = &h->open[python_gc_collecting - 1];
        gc_slot *s = top->slot;
        if (s->open_id != top->id) {
            drop_entry(python_gc_collecting - 1);
            continue;
        }
        if (!s->collecting || !flag_trusted() || *s->collecting)
            return;
        close_unfinished(s);
    }
}

/* 3.8 keeps the collector's state, gc.callbacks included, in _PyRuntime:
 * one list for every interpreter, whose collections are all the runtime's.
 * The main interpreter's callable sees them all; one per subinterpreter
 * would be called as many more times per collection. */
static int runtime_wide(void)
{
    return py.minor < 9;
}

static int64_t current_interpreter(void);

static void on_start(gc_slot *s, const volatile int *flag, py_object *phase, py_object *info)
{
    /* Collections of one interpreter do not nest: one still open ended,
     * whichever thread ran it (its entry there goes stale). */
    if (s->open_id)
        close_unfinished(s);
    s->collecting = flag;
    tf_event e = { .kind = TF_EV_GC_START };
    e.u.gc.generation = (int32_t)info_field(info, "generation");
    e.u.gc.interp = (uint64_t)(atomic_load(&s->interp) - 1);
    if (runtime_wide()) {
        int64_t id = current_interpreter();   /* the one whose thread collects */
        if (id >= 0)
            e.u.gc.interp = (uint64_t)id;
        else
            py.PyErr_Clear();
    }
    python_alloc_look(layout ? young_count() : 0);
    allocation_counts(s, e.u.gc.generation, e.u.gc.allocs);
    s->start_ns = monotonic_ns();
    s->open_generation = e.u.gc.generation;
    s->open_interp = e.u.gc.interp;
    thread_mem *m = thread_mem_get();
    gc_here *h = m ? (gc_here *)m->gc : NULL;
    uint64_t seq = rec_event(&e, REC_STACKS | (h ? REC_OPEN : 0));
    s->open_id = atomic_fetch_add(&open_ids, 1) + 1;
    if (!h)
        return;   /* recorded, not opened: its stop finds no entry */
    note_preamble(h, phase, info);
    /* The entry first: a signal handler's event between the two sees a
     * consistent list. */
    const char *tstate = layout && (layout->tstate_frame != PY_NO_FIELD || layout->tstate_cframe != PY_NO_FIELD)
                             ? py.current_tstate() : NULL;
    if (python_gc_collecting < OPEN_MAX)
        h->open[python_gc_collecting] = (open_gc){ .slot = s, .id = s->open_id, .seq = seq, .tstate = tstate,
                                                   .frame = tstate ? frame_of(tstate) : NULL };
    python_gc_collecting++;
}

static void on_stop(gc_slot *s, py_object *info)
{
    tf_event e = { .kind = TF_EV_GC_STOP };
    e.u.gc.generation = (int32_t)info_field(info, "generation");
    e.u.gc.interp = s->open_id ? s->open_interp : (uint64_t)(atomic_load(&s->interp) - 1);
    int64_t collected = info_field(info, "collected");
    int64_t uncollectable = info_field(info, "uncollectable");
    e.u.gc.collected = collected > 0 ? (uint64_t)collected : 0;
    e.u.gc.uncollectable = uncollectable > 0 ? (uint64_t)uncollectable : 0;
    e.u.gc.duration_ns = s->start_ns ? monotonic_ns() - s->start_ns : 0;
    if (s->open_id)
        close_open(s);
    rec_event(&e, 0);
}

#define TPFLAGS_UNICODE_SUBCLASS (1ul << 28)
#define TPFLAGS_DICT_SUBCLASS (1ul << 29)

static int has_type_flag(py_object *o, unsigned long flag)
{
    return (py.PyType_GetFlags(py_type_of(o)) & flag) != 0;
}

/* Called the fast way (METH_FASTCALL): the arguments arrive as the
 * collector's own array.  As METH_VARARGS, CPython made a 2-tuple for every
 * call, counted as a new object in generation 0 and freed to the tuple free
 * list, which counts nothing: each collection left the young count one
 * higher than a Python callback does, and the program's collections came at
 * other times than without us. */
static py_object *gc_callback(py_object *self, py_object *const *args, ssize_t nargs)
{
    ssize_t i = self ? py.PyLong_AsSsize_t(self) : -1;
    py_object *phase = nargs == 2 ? args[0] : NULL;
    py_object *info = phase ? args[1] : NULL;
    /* As the collector calls it: (str, dict), during a collection. */
    if (phase && info && has_type_flag(phase, TPFLAGS_UNICODE_SUBCLASS) &&
        has_type_flag(info, TPFLAGS_DICT_SUBCLASS) && i >= 0 && i < MAX_INTERPRETERS &&
        atomic_load(&slots[i].interp) && flag_in_collection(collecting_flag())) {
        if (py.PyUnicode_CompareWithASCIIString(phase, "start") == 0)
            on_start(&slots[i], collecting_flag(), phase, info);
        else if (py.PyUnicode_CompareWithASCIIString(phase, "stop") == 0) {
            on_stop(&slots[i], info);
            /* A thread CuPy's hook is not registered on yet (one started
             * before CuPy was imported, raising no audit event since). */
            python_cupy_on_collection();
        }
    }
    if (py.PyErr_Occurred())
        py.PyErr_Clear();
    py.Py_IncRef(py.none);
    return py.none;
}

static py_method_def gc_callback_def = {
    "libtrace_gc_callback", (py_cfunction)(void (*)(void))gc_callback, PY_METH_FASTCALL,
    "Records gc_start/gc_stop events (libtrace)."
};

static int64_t current_interpreter(void)
{
    void *interp = py.PyInterpreterState_Get();
    return interp ? py.PyInterpreterState_GetID(interp) : -1;
}

static gc_slot *slot_of(int64_t id)
{
    for (int i = 0; i < MAX_INTERPRETERS; i++)
        if (atomic_load(&slots[i].interp) == id + 1)
            return &slots[i];
    return NULL;
}

static ssize_t claim_slot(int64_t id)
{
    for (int i = 0; i < MAX_INTERPRETERS; i++) {
        int64_t expected = 0;
        if (atomic_compare_exchange_strong(&slots[i].interp, &expected, id + 1)) {
            slots[i].open_id = slots[i].start_ns = 0;
            slots[i].collecting = NULL;
            slots[i].callable = NULL;
            atomic_store(&slots[i].said_removed, 0);
            memset(slots[i].since_collected, 0, sizeof slots[i].since_collected);
            return i;
        }
    }
    return -1;
}

/* The current interpreter's own callbacks list, the one the collector
 * calls (gc.callbacks is the same object): struct _gc_runtime_state holds
 * garbage and then callbacks after collecting, from 3.8 to 3.13.  From 3.10
 * the interpreter makes both lists when it starts; 3.8 and 3.9 make them
 * when gc is first imported.  NULL when they are not there yet, do not
 * look like lists, or a collection runs. */
static py_object *interpreter_callbacks(void)
{
    const char *base = layout && py.list_type ? gc_base() : NULL;
    if (!base)
        return NULL;
    const char *collecting = base + layout->gc_young_count + PY_GC_COLLECTING_FROM_YOUNG;
    py_object *garbage = *(py_object *const *)(collecting + PY_GC_GARBAGE_FROM_COLLECTING);
    py_object *callbacks = *(py_object *const *)(collecting + PY_GC_CALLBACKS_FROM_COLLECTING);
    if (*(const int *)collecting != 0 || !garbage || !callbacks || py_type_of(garbage) != py.list_type ||
        py_type_of(callbacks) != py.list_type)
        return NULL;
    return callbacks;
}

/* 3.8 and 3.9 make gc.callbacks (3.8 gc.garbage too) when gc is first
 * imported (PyInit_gc keeps lists already there), and the collector does
 * without them until then.  Made here, as PyInit_gc would make them and owned by
 * the collector's state, they spare the import: with it, 'gc' was in
 * sys.modules of every traced 3.8 and 3.9 program that never imported it.
 * A new reference to the callbacks list, or NULL (nothing changed). */
static py_object *make_interpreter_lists(void)
{
    py_object *(*list_new)(ssize_t);
    *(void **)&list_new = py.minor <= 9 && layout && py.list_type ? py_sym("PyList_New") : NULL;
    char *base = list_new ? (char *)gc_base() : NULL;
    if (!base)
        return NULL;
    char *collecting = base + layout->gc_young_count + PY_GC_COLLECTING_FROM_YOUNG;
    py_object **garbage = (py_object **)(collecting + PY_GC_GARBAGE_FROM_COLLECTING);
    py_object **callbacks = (py_object **)(collecting + PY_GC_CALLBACKS_FROM_COLLECTING);
    if (*(const int *)collecting != 0 || *callbacks)
        return NULL;
    /* 3.9 makes garbage when the interpreter starts, 3.8 with callbacks. */
    py_object *g = *garbage ? NULL : list_new(0), *c = *garbage || g ? list_new(0) : NULL;
    if (!c) {
        if (g)
            py.Py_DecRef(g);
        py.PyErr_Clear();
        return NULL;
    }
    if (g)
        *garbage = g;
    *callbacks = c;
    py.Py_IncRef(c);
    return c;
}

/* Append a callable to the current interpreter's gc.callbacks.  0 on
 * failure (the exception is cleared).  Taken from the interpreter where it
 * is there (or made there, 3.8 and 3.9), so that gc is not imported: the
 * program would see it in sys.modules, and in what -X importtime and -v
 * print.  Else, with may_import, gc.callbacks: only for the main
 * interpreter, because a 3.9 subinterpreter's gc module is a copy of the
 * main one's (single-phase init), its callbacks the main interpreter's
 * list, and the subinterpreter's own collector has none to call. */
static int append_callback(ssize_t slot, int may_import)
{
    py_object *self = py.PyLong_FromSsize_t(slot);
    py_object *callback = self ? py.PyCFunction_NewEx(&gc_callback_def, self, NULL) : NULL;
    py_object *callbacks = callback ? interpreter_callbacks() : NULL;
    py_object *gc = NULL;
    if (callbacks) {
        py.Py_IncRef(callbacks);
    } else if (callback && may_import && !(callbacks = make_interpreter_lists())) {
        gc = py.PyImport_ImportModule("gc");
        callbacks = gc ? py.PyObject_GetAttrString(gc, "callbacks") : NULL;
    }
    int ok = callbacks && py.PyList_Append(callbacks, callback) == 0;
    slots[slot].callable = ok ? callback : NULL;
    /* The list keeps the callable alive; gc, if imported, stays in sys.modules. */
    if (callbacks)
        py.Py_DecRef(callbacks);
    if (gc)
        py.Py_DecRef(gc);
    if (callback)
        py.Py_DecRef(callback);
    if (self)
        py.Py_DecRef(self);
    if (!ok)
        py.PyErr_Clear();
    return ok;
}

int python_gc_install(void)
{
    layout = py_layout_get();
    runtime = py_sym("_PyRuntime");
    if (layout && layout->gc_in_runtime && !runtime)
        layout = NULL;
    return python_gc_attach_current();
}

int python_gc_attach_current(void)
{
    int64_t id = current_interpreter();
    if (id < 0) {
        py.PyErr_Clear();
        return 0;
    }
    if (slot_of(id))
        return 1;
    ssize_t slot = claim_slot(id);
    if (slot < 0) {
        rec_info("not_watched", "collections of some subinterpreters: more than 64 at once");
        return 0;
    }
    if (!append_callback(slot, id == 0)) {
        /* A subinterpreter keeps its slot, without a callable, so that
         * its later imports do not try (and say so) again. */
        if (id == 0)
            atomic_store(&slots[slot].interp, 0);
        return 0;
    }
    if (layout)
        flag_note_outside();
    rec_set_open_check(check_open);
    return 1;
}

void python_gc_on_audit_event(const char *event)
{
    /* A subinterpreter's first import: its import system works, so gc can
     * be imported there.  Py_EndInterpreter clears it: its slot is free. */
    if (!strcmp(event, "import") && !runtime_wide()) {
        int64_t id = current_interpreter();
        /* Not during one of its collections: its list is read in place
         * only outside them (a later import tries again). */
        const volatile int *flag = id > 0 ? collecting_flag() : NULL;
        if (flag && *flag)
            return;
        if (id > 0 && !slot_of(id) && !python_gc_attach_current())
            rec_info("not_watched", "collections of a subinterpreter: could not join its own "
                                    "gc.callbacks list (Python 3.9 makes none)");
    } else if (!strcmp(event, "cpython.PyInterpreterState_Clear")) {
        int64_t id = current_interpreter();
        gc_slot *s = id >= 0 ? slot_of(id) : NULL;
        if (s) {
            /* Its state is about to go: a collection of it still open is
             * closed here if it is this thread's, and its flag no longer
             * read in any case.  Its list is still there: one the program
             * emptied with no audit event after is told of now (the audit
             * hook runs with the GIL). */
            if (s->open_id && entry_of(s) >= 0)
                close_unfinished(s);
            say_if_removed(s, 1);
            s->open_id = 0;
            s->collecting = NULL;
            atomic_store(&s->interp, 0);
        }
    }
    if (py.PyErr_Occurred())
        py.PyErr_Clear();
}

/* Every 64th audit event: some run per call of a hot function, and the
 * list rarely changes (a program that empties it and raises no audit event
 * after is told of when its interpreter is cleared). */
void python_gc_look(void)
{
    static _Atomic uint32_t events;
    if (atomic_fetch_add_explicit(&events, 1, memory_order_relaxed) % 64 != 0)
        return;
    int64_t id = current_interpreter();
    if (id < 0) {
        py.PyErr_Clear();   /* ours: no interpreter id */
        return;
    }
    gc_slot *s = slot_of(id);
    if (s)
        say_if_removed(s, 1);   /* the audit hook runs with the GIL */
}

void python_gc_forget_all(void)
{
    /* The interpreters' states go with the round: no flag of theirs is
     * read again, and a collection left open here is closed. */
    for (int i = 0; i < MAX_INTERPRETERS; i++) {
        gc_slot *s = &slots[i];
        if (s->open_id && entry_of(s) >= 0)
            close_unfinished(s);
        s->open_id = 0;
        s->collecting = NULL;
        atomic_store(&s->interp, 0);
    }
}
