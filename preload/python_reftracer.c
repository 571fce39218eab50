/*
 * python_reftracer.c - py_double_init through CPython's reference tracer
 * (PyRefTracer_SetTracer, 3.13+).
 *
 * The interpreter calls the tracer with CREATE from _Py_NewReference (every
 * initialisation, PyObject_Init included, whoever calls it) and DESTROY from
 * deallocation.  A CREATE for an address that is still live (CREATE seen, no
 * DESTROY since) is an object initialised twice: the seed-001 bug.  Unlike
 * interposing PyObject_Init, this works in a static interpreter too.
 *
 * The live addresses are a bitmap, one bit per 8 bytes of address space
 * (objects are at least 8-byte aligned), in 1 KiB pieces that each cover
 * 64 KiB, found through an open-addressing table keyed by the 64 KiB chunk.
 * Objects are allocated close together (pymalloc pools, arenas), so
 * consecutive events touch the same few cache lines; a first version that
 * hashed each address scattered them over the whole set and missed the
 * cache on almost every event (an allocation-heavy loop took several times
 * as long as with this layout).  Everything is touched only
 * with the GIL held: the tracer runs under it and needs no lock
 * (free-threaded builds are refused).  The tracer must not create Python
 * objects or touch exceptions: it only reads the object header and calls the
 * recorder.
 *
 * Objects created before we attach are not in the set: their DESTROY finds
 * nothing and a later CREATE at their address is a first one.  3.13.0 to
 * 3.13.2 miss DESTROY events from the interpreter's inlined decrefs, so a
 * reused address looks initialised twice there (python_init_check.c only uses
 * us on those when told to).
 */
#include "python_internal.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { REF_CREATE = 0, REF_DESTROY = 1 };   /* PyRefTracerEvent */
typedef int (*ref_tracer)(py_object *op, int event, void *data);

#define GRAIN_SHIFT 3             /* one bit per 8 bytes */
#define CHUNK_SHIFT 16            /* one bitmap per 64 KiB of address space */
#define BITMAP_WORDS ((size_t)1 << (CHUNK_SHIFT - GRAIN_SHIFT - 6))
#define MIN_TABLE_BITS 10
/* 2^18 bitmaps (256 MiB, reserved up front, committed as used) cover 16 GiB
 * of distinct object addresses; a process that spreads its objects wider
 * makes us give up rather than grow without bound. */
#define MAX_BITMAPS ((size_t)1 << 18)
#define POOL_BYTES (MAX_BITMAPS * BITMAP_WORDS * sizeof(uint64_t))

typedef struct chunk {
    uintptr_t key;                /* address >> CHUNK_SHIFT; 0 = empty (no
                                     object lives in the first 64 KiB) */
    uint64_t *bits;
} chunk;

static struct {
    chunk *table;
    unsigned table_bits;
    size_t chunks;                /* bitmaps in use, bump-allocated from pool */
    uint64_t *pool;
    uintptr_t last_key;           /* the chunk of the previous event */
    uint64_t *last_bits;
} live;

static enum { RT_OFF, RT_ON, RT_STOPPED } state;
/* The live set is touched with no lock, which holds only while one GIL
 * guards every call of the tracer: the tracer is the runtime's, called from
 * every interpreter, and a subinterpreter may have a GIL of its own (3.12+:
 * _interpreters.create()'s default; concurrent.interpreters in 3.14).  Two
 * threads can then tear the one-entry cache (a CREATE sets its bit in
 * another chunk's bitmap), insert into and double the table under each
 * other (a read of the old table after its munmap), and an interpreter's
 * end frees its arenas with their objects still marked live (no DESTROY):
 * a false report of a double initialisation, or a crash (read from the
 * code: 3.13.0, the only 3.13 here, misses DESTROY events of its own and
 * cannot show it).  No audit event tells
 * (3.12+ raises cpython.PyInterpreterState_New with no thread state, so no
 * hook hears it), so each event first compares the runtime's newest
 * interpreter with the main one (new ones go to the head of the list, the
 * main one stays last): the first event that finds another stops the check.
 * Until then every call is under the main GIL; after it no call touches the
 * set.  The head is read where _PyRuntime's debug offsets (3.13+) say it
 * is, one load: PyInterpreterState_Head() per event, an indirect call, took
 * 0.539 s of CPU against 0.532 without the check, for 4.2 million objects
 * made and freed (3.13.0, TRACE_PY_REFTRACER=on; 0.470 bare); the load
 * 0.535 against 0.537 (5 runs each, side by side, load average 5).  Where
 * the offsets are not found, the call it is. */
static void *const *head_slot;
static void *main_interp;

static void *interp_head(void)
{
    return __builtin_expect(head_slot != NULL, 1) ? __atomic_load_n(head_slot, __ATOMIC_RELAXED)
                                                  : py.PyInterpreterState_Head();
}

/* _PyRuntime starts with its debug offsets: a cookie, the version, whether
 * free-threaded, then the runtime state's size, finalizing and
 * interpreters.head offsets. */
static void *const *find_head_slot(void)
{
    const char *runtime = py_sym("_PyRuntime");
    if (!runtime || memcmp(runtime, "xdebugpy", 8) != 0)
        return NULL;
    uint64_t head_at;
    memcpy(&head_at, runtime + 40, sizeof head_at);     /* 8 + 2 words + 2 words */
    void *const *slot = (void *const *)(runtime + head_at);
    return head_at && *slot == py.PyInterpreterState_Head() ? slot : NULL;
}
static ref_tracer prev_tracer;    /* the one we replaced, called after us */
static void *prev_data;
static ref_tracer (*get_tracer)(void **data);
static int (*set_tracer)(ref_tracer tracer, void *data);

/* Types CPython alone constructs and whose addresses come back in a CREATE
 * without a DESTROY in the 3.13 sources: tuple, bytes and str resized in
 * place (realloc, then _Py_NewReferenceNoTotal on the same address); int,
 * float and str freed by the evaluation loop's _Py_DECREF_SPECIALIZED, which
 * calls the destructor directly.  A double initialisation by an extension
 * concerns the extension's own types, so these are not reported. */
static const void *exempt_types[5];

static int on_ref_event(py_object *op, int event, void *data);

static void *map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t table_size(unsigned bits)
{
    return sizeof(chunk) << bits;
}

static size_t home_slot(uintptr_t key, unsigned bits)
{
    /* Fibonacci hashing: chunk keys are nearly consecutive, the multiply
     * spreads them and the top bits index the table. */
    return (size_t)((key * 0x9E3779B97F4A7C15u) >> (64 - bits));
}

static chunk *slot_of(chunk *table, unsigned bits, uintptr_t key)
{
    size_t mask = ((size_t)1 << bits) - 1;
    size_t i = home_slot(key, bits);
    while (table[i].key && table[i].key != key)
        i = (i + 1) & mask;
    return &table[i];
}

/* Doubles the chunk table; 0 when memory is short. */
static int table_grow(void)
{
    unsigned bits = live.table_bits + 1;
    chunk *table = map(table_size(bits));
    if (!table)
        return 0;
    for (size_t i = 0; i < (size_t)1 << live.table_bits; i++)
        if (live.table[i].key)
            *slot_of(table, bits, live.table[i].key) = live.table[i];
    munmap(live.table, table_size(live.table_bits));
    live.table = table;
    live.table_bits = bits;
    return 1;
}

/* The bitmap of the chunk holding addr; with create, a new one if needed.
 * NULL when there is none (or, with create, no room for one). */
static uint64_t *bitmap_of(uintptr_t addr, int create)
{
    uintptr_t key = addr >> CHUNK_SHIFT;
    if (key == live.last_key)
        return live.last_bits;
    chunk *c = slot_of(live.table, live.table_bits, key);
    if (!c->key) {
        if (!create || live.chunks == MAX_BITMAPS)
            return NULL;
        if (live.chunks * 2 >= (size_t)1 << live.table_bits) {
            if (!table_grow())
                return NULL;
            c = slot_of(live.table, live.table_bits, key);
        }
        c->key = key;
        c->bits = live.pool + live.chunks++ * BITMAP_WORDS;
    }
    live.last_key = key;
    live.last_bits = c->bits;
    return c->bits;
}

static size_t word_of(uintptr_t addr)
{
    return (addr & (((uintptr_t)1 << CHUNK_SHIFT) - 1)) >> (GRAIN_SHIFT + 6);
}

static uint64_t bit_of(uintptr_t addr)
{
    return (uint64_t)1 << ((addr >> GRAIN_SHIFT) & 63);
}

static void release_set(void)
{
    if (live.table)
        munmap(live.table, table_size(live.table_bits));
    if (live.pool)
        munmap(live.pool, POOL_BYTES);
    memset(&live, 0, sizeof live);
}

static int init_set(void)
{
    live.table_bits = MIN_TABLE_BITS;
    live.table = map(table_size(live.table_bits));
    live.pool = map(POOL_BYTES);
    if (live.table && live.pool)
        return 1;
    release_set();
    return 0;
}

static int ours_is_current(void)
{
    void *data;
    return get_tracer(&data) == on_ref_event && data == &live;
}

static void give_up(void)
{
    state = RT_STOPPED;
    release_set();
    if (ours_is_current())
        set_tracer(prev_tracer, prev_data);   /* step out of the chain */
    rec_info("py_double_init", "off: the reference tracer stopped: objects spread over "
             "more than 16 GiB of addresses, or no memory for its tables");
}

static int exempt(const py_object *type)
{
    for (size_t i = 0; i < sizeof exempt_types / sizeof *exempt_types; i++)
        if (type == exempt_types[i])
            return 1;
    return 0;
}

static void on_create(py_object *op)
{
    uintptr_t addr = (uintptr_t)op;
    uint64_t *bits = bitmap_of(addr, 1);
    if (!bits) {
        give_up();
        return;
    }
    uint64_t *word = &bits[word_of(addr)];
    if (!(*word & bit_of(addr))) {
        *word |= bit_of(addr);
        return;
    }
    py_object *type = py_type_of(op);
    if (!exempt(type))
        python_double_init_record(op, type);
}

static void on_destroy(py_object *op)
{
    uintptr_t addr = (uintptr_t)op;
    uint64_t *bits = bitmap_of(addr, 0);
    if (bits)
        bits[word_of(addr)] &= ~bit_of(addr);
}

/* A subinterpreter exists: stop, said once whichever threads see it.  The
 * tables stay mapped (another interpreter's thread may still be in them)
 * and ours stays in the chain, forwarding (swapping the runtime's tracer
 * and its data is two stores another interpreter could read between). */
static void stop_for_subinterpreter(void)
{
    if (__atomic_exchange_n(&state, RT_STOPPED, __ATOMIC_RELAXED) == RT_ON)
        rec_info("py_double_init", "off: a subinterpreter was created; the reference tracer's "
                 "check holds for one interpreter only, and stopped");
}

static int on_ref_event(py_object *op, int event, void *data)
{
    (void)data;
    if (state == RT_ON && op) {
        if (__builtin_expect(interp_head() != main_interp, 0))
            stop_for_subinterpreter();
        else if (event == REF_CREATE)
            on_create(op);
        else if (event == REF_DESTROY)
            on_destroy(op);
    }
    return prev_tracer ? prev_tracer(op, event, prev_data) : 0;
}

const char *python_reftracer_prepare(void)
{
    if (py.minor < 13)
        return "the reference tracer needs 3.13+";
    if (strstr(py.Py_GetVersion(), "free-threading"))
        return "the reference tracer check needs the GIL (free-threaded build)";
    *(void **)&get_tracer = py_sym("PyRefTracer_GetTracer");
    *(void **)&set_tracer = py_sym("PyRefTracer_SetTracer");
    if (!get_tracer || !set_tracer)
        return "PyRefTracer_SetTracer is missing";
    if (!py.PyInterpreterState_Head || !py.PyInterpreterState_Main)
        return "PyInterpreterState_Head is missing";
    return NULL;
}

const char *python_reftracer_start(void)
{
    static const char *const exempt_names[] = {
        "PyTuple_Type", "PyBytes_Type", "PyUnicode_Type", "PyLong_Type", "PyFloat_Type"
    };
    for (size_t i = 0; i < sizeof exempt_names / sizeof *exempt_names; i++)
        exempt_types[i] = py_sym(exempt_names[i]);
    head_slot = find_head_slot();
    main_interp = py.PyInterpreterState_Main();
    if (interp_head() != main_interp)
        return "a subinterpreter exists (the check holds for one interpreter only)";
    release_set();              /* an earlier round's, stopped with its tables kept */
    if (!init_set())
        return "no memory for the reference tracer's tables";
    /* tracemalloc, or another tool, may already trace: keep it working. */
    prev_tracer = get_tracer(&prev_data);
    if (set_tracer(on_ref_event, &live) != 0) {
        release_set();
        return "PyRefTracer_SetTracer failed";
    }
    state = RT_ON;
    return NULL;
}

void python_reftracer_poll(void)
{
    if (state != RT_ON || ours_is_current())
        return;
    /* tracemalloc.start() and stop() set their own tracer (or none) without
     * chaining to ours: from here on we would miss events. */
    state = RT_STOPPED;
    release_set();
    rec_info("py_double_init", "off: the reference tracer was replaced (tracemalloc "
             "started or stopped?); the double-initialisation check stopped");
}
