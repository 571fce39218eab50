/*
 * python_stack.c - the Python stack of the thread recording an event.
 *
 * Nothing runs per Python call: at event time we walk the interpreter's own
 * frame chain through per-version offsets (python_layout.h) and keep (code
 * object, instruction offset) pairs.  A thread reads only its own frames:
 * those of its current thread state when it holds the GIL, else those of the
 * thread state bound to it (the GIL-state key, PyGILState_GetThisThreadState).
 * A thread that released the GIL around a call (ctypes, an extension wrapping
 * cudaMalloc or a large allocation in Py_BEGIN_ALLOW_THREADS) is inside that
 * call until we return: no other thread pushes or pops its frames, and the
 * code objects they hold stay alive, so its stack is stable while we read it.
 * Turning a pair into file, line and function happens right after, under the
 * recorder's lock, with PyCode_Addr2Line (public, allocation-free, reads only
 * the immutable line table) and the str objects read in place.  Nothing here
 * creates a Python object: the public frame API does on 3.11+, which could
 * start a collection inside our hook.
 */
#include "python_internal.h"
#include "python_layout.h"
#include "python_text.h"
#include "recorder.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#define FIELD(obj, off, type) (*(type *)((char *)(obj) + (off)))
#define OB_TYPE 8               /* offsetof(PyObject, ob_type) */

static const py_layout *layout;

/* This thread's own thread state.  On 3.8-3.11 the "current" thread state is
 * global: it is the GIL holder's, whichever thread asks, and ours only if it
 * is the one bound to this thread.  From 3.12 it is thread-local and NULL
 * unless this thread holds the GIL (then it is right in a subinterpreter
 * too).  Without the GIL, the state bound to the thread by the GIL-state key.
 * PyGILState_Check is not used: it lies before initialisation and once a
 * subinterpreter exists. */
static void *own_tstate(void)
{
    if (!py.Py_IsInitialized())
        return NULL;            /* before attach, or finalising */
    void *tstate = py.current_tstate();
    if (tstate && py.minor >= 12)
        return tstate;          /* thread-local: ours, the GIL held */
    void *bound = py.PyGILState_GetThisThreadState();
    if (tstate && tstate == bound)
        return tstate;
    return bound;               /* GIL released: our frames are still ours */
}

/* The thread state only when this thread holds the GIL (python_threads.c
 * reads threading's dict, which needs it). */
void *python_tstate_if_holding_gil(void)
{
    if (!py.Py_IsInitialized())
        return NULL;
    void *tstate = py.current_tstate();
    if (!tstate)
        return NULL;
    if (py.minor < 12 && tstate != py.PyGILState_GetThisThreadState())
        return NULL;
    return tstate;
}

static void *innermost_frame(void *tstate)
{
    if (layout->tstate_cframe != PY_NO_FIELD) {
        void *cframe = FIELD(tstate, layout->tstate_cframe, void *);
        return cframe ? FIELD(cframe, layout->cframe_frame, void *) : NULL;
    }
    return FIELD(tstate, layout->tstate_frame, void *);
}

/* Byte offset of the frame's current instruction, -1 before the first. */
static int64_t instruction_offset(void *frame, void *code)
{
    if (layout->instr_is_lasti)
        return (int64_t)FIELD(frame, layout->frame_instr, int) * layout->lasti_unit;
    char *instr = FIELD(frame, layout->frame_instr, char *);
    return instr - ((char *)code + layout->code_bytecode);
}

static int capture(rec_py_raw *restrict out, int max)
{
    void *tstate = own_tstate();
    if (!tstate)
        return 0;
    int n = 0;
    for (void *f = innermost_frame(tstate); f && n < max; f = FIELD(f, layout->frame_back, void *)) {
        if (layout->frame_owner != PY_NO_FIELD &&
            FIELD(f, layout->frame_owner, char) == layout->owner_cstack)
            continue;           /* shim frame of a C call: no Python code */
        void *code = FIELD(f, layout->frame_code, void *);
        if (!code || FIELD(code, OB_TYPE, void *) != (void *)py.code_type)
            continue;
        out[n].code = (uint64_t)(uintptr_t)code;
        out[n].where = (uint64_t)instruction_offset(f, code);
        n++;
    }
    return n;
}

/* Direct-mapped caches, used only under the recorder's lock.  A code object
 * may die and its address be reused, by a code object with other file,
 * name or lines (and often with its strings at the dead ones' addresses
 * too): each death empties the code's entry (python_code_deaths.c), and a
 * line entry holds the serial of the code entry it was made with, so it
 * cannot outlive it.  A new writer, a new segment or a fork empties all. */
#define CODE_CACHE 4096u
#define LINE_CACHE 8192u
typedef struct code_entry { uintptr_t code; uint32_t id, serial; } code_entry;
typedef struct line_entry { uintptr_t code; int64_t where; uint32_t serial; int line; } line_entry;
static code_entry code_cache[CODE_CACHE];
static line_entry line_cache[LINE_CACHE];
static uint32_t last_serial;
static tf_writer *cached_for;
static uint32_t cached_epoch;  /* the writer forgets its ids at each segment */
static uint64_t buried;        /* code deaths already applied to the caches */

static uint32_t slot_of(uintptr_t key, uint64_t salt, uint32_t size)
{
    return (uint32_t)(((key ^ (salt << 17)) * 0x9E3779B97F4A7C15ull) >> 40) & (size - 1);
}

static uint32_t intern_text(tf_writer *w, void *str)
{
    char buf[1024];
    size_t n = py_text_utf8(layout, str, buf, sizeof buf);
    return n ? tf_write_string(w, buf, n) : tf_write_string(w, "?", 1);
}

static uint32_t intern_code(tf_writer *w, void *code)
{
    int first_line = FIELD(code, layout->code_firstlineno, int);
    return tf_write_py_code(w, intern_text(w, FIELD(code, layout->code_filename, void *)),
                            intern_text(w, FIELD(code, layout->code_name, void *)),
                            first_line > 0 ? (uint32_t)first_line : 0);
}

/* The live code object's entry.  With `cached` 0 (deaths are not watched)
 * nothing is kept: a scratch entry is filled every time. */
static const code_entry *code_of(tf_writer *w, void *code, int cached)
{
    static code_entry scratch;
    code_entry *e = cached ? &code_cache[slot_of((uintptr_t)code, 0, CODE_CACHE)] : &scratch;
    if (cached && e->code == (uintptr_t)code)
        return e;
    uint32_t serial = ++last_serial ? last_serial : ++last_serial;
    *e = (code_entry){ .code = (uintptr_t)code, .id = intern_code(w, code), .serial = serial };
    return e;
}

static int line_of(void *code, const code_entry *c, int64_t where, int cached)
{
    line_entry *e = &line_cache[slot_of((uintptr_t)code, (uint64_t)where, LINE_CACHE)];
    if (cached && e->code == (uintptr_t)code && e->where == where && e->serial == c->serial)
        return e->line;
    /* Before the first instruction, or on one with no line (3.11+'s
     * prologue), the frame is at its first line. */
    int line = where < 0 ? -1 : py.PyCode_Addr2Line(code, (int)where);
    if (line <= 0)
        line = FIELD(code, layout->code_firstlineno, int);
    if (cached)
        *e = (line_entry){ .code = (uintptr_t)code, .where = where, .serial = c->serial, .line = line };
    return line;
}

/* Bumped whenever the caches are emptied (a new writer, a new segment, a
 * fork, deaths no longer known): a thread's memo from before is void. */
static uint32_t cache_generation = 1;

static void forget_caches(void)
{
    memset(code_cache, 0, sizeof code_cache);
    memset(line_cache, 0, sizeof line_cache);
    cache_generation++;
}

/* Apply the code deaths since the last call, up to `now`, to the caches. */
static void bury(uint64_t now)
{
    if (now - buried > CODE_DEATHS_KEPT) {
        forget_caches();
        buried = now;
        return;
    }
    for (; buried < now; buried++) {
        uintptr_t dead;
        if (!code_deaths_get(buried, &dead)) {
            forget_caches();
            buried = now;
            return;
        }
        code_entry *e = &code_cache[slot_of(dead, 0, CODE_CACHE)];
        if (e->code == dead)
            e->code = 0;
    }
}

/*
 * Each thread's recent Python stacks, so that an event with a stack it met
 * lately (an allocation loop cycles through a few) costs a hash and a
 * compare instead of two cache look-ups per frame and a hash and look-up of
 * the whole stack in the writer.  The key is what the interned stack is made
 * of, read afresh at every event: per frame the code object and the
 * instruction offset; a slot holding a code object that died since is
 * emptied before the slots are searched (the thread reads the deaths it has
 * not seen yet).  Frame addresses are not part of it: CPython reuses
 * them (the frame free lists of 3.8-3.10, the data stack from 3.11), so the
 * same address at the same depth says nothing about which call it is, while
 * the same (code, instruction) sequence is the same stack whichever frames
 * hold it.  A miss still takes the (code id, line) of each frame that
 * matches the thread's previous stack, counted from the outermost: a loop's
 * callers stay put while its innermost frame moves.
 *
 * 64 slots, in 16 sets of four picked by the hash: a recursive program
 * cycles through a few dozen stacks (bench/workloads/churn_cycles builds
 * trees by recursion through list comprehensions, 1054 stacks 11 to 14
 * frames deep), and 8 slots searched one by one missed on a quarter of its
 * events, a miss costing ten times a hit (callgrind, churn_cycles 0.1 with
 * every GC allocation recorded: capture and intern fell from 499 to 314
 * million instructions, the whole run from 1.48 to 1.28 billion; sets of
 * two missed two to three times as often as sets of four, depending on
 * which bits of the hash picked the set).  About 100 KiB a thread, touched
 * as slots fill.
 *
 * Read and written only by its thread, under the recorder's lock (intern
 * runs there), so a signal handler recording an event on the same thread
 * cannot meet it half written: its event is dropped before capture.  Mapped
 * at the thread's first stack (not static TLS: libtrace.so may be loaded
 * late, where static TLS is scarce), unmapped at its exit.  Deeper stacks
 * than MEMO_FRAMES take the caches' path every time.
 */
#define MEMO_WAYS 4
#define MEMO_SETS 16
#define MEMO_SLOTS (MEMO_WAYS * MEMO_SETS)
#define MEMO_FRAMES 64
typedef struct memo_frame {
    uintptr_t code;
    int64_t where;
    tf_py_frame interned;
} memo_frame;
/* The slots' keys together (one or two cache lines to scan), their frames
 * apart. */
typedef struct memo_slot {
    uint64_t hash;
    uint32_t generation;       /* cache_generation of id; 0: empty */
    uint32_t id;
    uint32_t used;             /* py_memo.clock at its last use */
    int n;
} memo_slot;
typedef struct py_memo {
    memo_slot slot[MEMO_SLOTS];  /* a stack in one of the ways of the set its hash picks */
    unsigned last;               /* the slot of the previous stack */
    uint32_t clock;              /* intern calls on this thread */
    uint64_t deaths_seen;        /* code deaths applied to the slots */
    memo_frame f[MEMO_SLOTS][MEMO_FRAMES];
} py_memo;

#define TLS static __thread __attribute__((tls_model("initial-exec")))
TLS py_memo *memo;
TLS int memo_failed;
static pthread_key_t memo_key;
static int memo_key_ok;

static void release_memo(void *p)
{
    memo = NULL;
    memo_failed = 1;           /* events later in the thread's exit go without */
    munmap(p, sizeof(py_memo));
}

static py_memo *memo_get(void)
{
    if (memo || memo_failed)
        return memo;
    memo_failed = 1;
    if (!memo_key_ok)
        return NULL;
    void *p = mmap(NULL, sizeof(py_memo), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(memo_key, p) != 0) {
        munmap(p, sizeof(py_memo));
        return NULL;
    }
    memo_failed = 0;
    memo = p;
    memo->deaths_seen = code_deaths_count();   /* its slots are empty */
    return memo;
}

/* Frame raw is memo frame m: same code object, same instruction.  The
 * same code object, not another at its address: the slot would have been
 * emptied at its death. */
static int memo_frame_is(const memo_frame *m, const rec_py_raw *raw)
{
    return m->code == raw->code && m->where == (int64_t)raw->where;
}

/* The n frames of raw are memo frames f, outermost last as captured: the
 * memo's hit path, run for nearly every event. */
static int frames_match(const memo_frame *f, const rec_py_raw *raw, int n)
{
    for (int i = 0; i < n; i++)
        if (f[i].code != raw[i].code || f[i].where != (int64_t)raw[i].where)
            return 0;
    return 1;
}

/* Empty the memo's slots that hold a code object dead since the thread
 * last looked, up to death `now`; all of them when those deaths are no
 * longer known. */
static void memo_bury(py_memo *m, uint64_t now)
{
    uint64_t from = m->deaths_seen;
    m->deaths_seen = now;
    int all = now - from > CODE_DEATHS_KEPT;
    for (uint64_t d = from; d < now && !all; d++) {
        uintptr_t dead;
        if (!code_deaths_get(d, &dead)) {
            all = 1;
            break;
        }
        for (unsigned s = 0; s < MEMO_SLOTS; s++) {
            memo_slot *e = &m->slot[s];
            if (e->generation != cache_generation)
                continue;
            for (int i = 0; i < e->n; i++)
                if (m->f[s][i].code == dead) {
                    e->generation = 0;
                    break;
                }
        }
    }
    if (all)
        for (unsigned s = 0; s < MEMO_SLOTS; s++)
            m->slot[s].generation = 0;
}

static uint64_t stack_hash(const rec_py_raw *raw, int n)
{
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++)
        h = ((h ^ raw[i].code) * 0xff51afd7ed558ccdull ^ raw[i].where) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* The stack's ids, computed: frames that match `from` (the previous stack,
 * of from_n frames; NULL for none) counted from the outermost are taken from
 * it.  Written into `to` as it goes (a different slot's frames, or NULL). */
static uint32_t intern_fresh(tf_writer *w, const rec_py_raw *raw, int n, const memo_frame *from,
                             int from_n, memo_frame *to, int cached)
{
    tf_py_frame frames[n > 0 ? n : 1];
    int shift = from ? from_n - n : 0;    /* frame i of raw against from[i + shift] */
    for (int i = 0; i < n; i++) {
        int j = i + shift;
        void *code = (void *)(uintptr_t)raw[i].code;
        if (from && j >= 0 && j < from_n && memo_frame_is(&from[j], &raw[i])) {
            frames[i] = from[j].interned;
            if (to)
                to[i] = from[j];
            continue;
        }
        const code_entry *c = code_of(w, code, cached);
        int line = line_of(code, c, (int64_t)raw[i].where, cached);
        frames[i].code = c->id;
        frames[i].line = line > 0 ? (uint32_t)line : 0;
        if (to)
            to[i] = (memo_frame){ .code = (uintptr_t)code, .where = (int64_t)raw[i].where,
                                  .interned = frames[i] };
    }
    return tf_write_py_stack(w, frames, (uint32_t)n);
}

static uint32_t intern(tf_writer *w, const rec_py_raw *raw, int n)
{
    if (w != cached_for || tf_writer_epoch(w) != cached_epoch) {
        forget_caches();
        cached_for = w;
        cached_epoch = tf_writer_epoch(w);
    }
    /* Another tool replaced the code type's deallocator after us: deaths
     * are no longer seen, so nothing cached can be trusted. */
    if (!code_deaths_watching())
        return intern_fresh(w, raw, n, NULL, 0, NULL, 0);
    uint64_t deaths = code_deaths_count();
    if (deaths != buried)
        bury(deaths);
    py_memo *m = n <= MEMO_FRAMES ? memo_get() : NULL;
    if (!m)
        return intern_fresh(w, raw, n, NULL, 0, NULL, 1);
    if (m->deaths_seen != deaths)
        memo_bury(m, deaths);
    uint64_t h = stack_hash(raw, n);
    m->clock++;
    unsigned set = (unsigned)(h >> 32) % MEMO_SETS * MEMO_WAYS;
    for (unsigned s = set; s < set + MEMO_WAYS; s++) {
        memo_slot *e = &m->slot[s];
        if (e->hash == h && e->n == n && e->generation == cache_generation &&
            frames_match(m->f[s], raw, n)) {
            e->used = m->clock;
            m->last = s;
            return e->id;
        }
    }
    /* A miss: the set's least recently used way goes, never the previous
     * stack's (a miss reads it; MEMO_WAYS >= 2 leaves another). */
    unsigned victim = set == m->last ? set + 1 : set;
    uint32_t oldest = UINT32_MAX;
    for (unsigned s = set; s < set + MEMO_WAYS; s++) {
        const memo_slot *e = &m->slot[s];
        int valid = e->generation == cache_generation;
        uint32_t age = valid ? e->used : 0;
        if (age < oldest && s != m->last) {
            oldest = age;
            victim = s;
        }
    }
    const memo_slot *prev = &m->slot[m->last];
    int prev_ok = prev->generation == cache_generation;
    memo_slot *e = &m->slot[victim];
    e->generation = 0;                        /* until whole */
    uint32_t id = intern_fresh(w, raw, n, prev_ok ? m->f[m->last] : NULL, prev_ok ? prev->n : 0,
                               m->f[victim], 1);
    if (id) {
        *e = (memo_slot){ .hash = h, .generation = cache_generation, .id = id, .used = m->clock,
                          .n = n };
        m->last = victim;
    }
    return id;
}

static const rec_py_provider provider = { capture, intern };

int python_stack_install(void)
{
    layout = py_layout_get();
    if (!layout || !code_deaths_install())
        return 0;
    if (!memo_key_ok)
        memo_key_ok = pthread_key_create(&memo_key, release_memo) == 0;
    pthread_atfork(NULL, NULL, forget_caches);
    rec_set_py_provider(&provider);
    return 1;
}
