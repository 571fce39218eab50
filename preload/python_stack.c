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
 * recorder's lock, with the code object's immutable line table and its str
 * objects read in place (python_lines.c, python_text.c).  Nothing here
 * creates a Python object: the public frame API does on 3.11+, which could
 * start a collection inside our hook.
 */
#include "python_internal.h"
#include "python_layout.h"
#include "python_layout_tables.h"
#include "python_lines.h"
#include "python_text.h"
#include "host_blocks.h"
#include "recorder.h"
#include "pages.h"
#include "python_greenlet.h"
#include "config.h"
#include "readable_run.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#define FIELD(obj, off, type) (*(type *)((char *)(obj) + (off)))

static const py_layout *layout;

/* 3.8-3.11: whether `tstate`, the GIL holder's, is this thread's, by its
 * thread_id (pthread_self of the thread it was made on, which no other
 * live thread has): a load and a compare, where asking the GIL-state key
 * (PyGILState_GetThisThreadState, a pthread_getspecific) cost about 30
 * instructions per event with every Python allocation recorded.  On only
 * where the offset was seen to hold this thread's id at install. */
static size_t thread_id_at = PY_NO_FIELD;

#define TLS static __thread __attribute__((tls_model("initial-exec")))
TLS unsigned long my_pthread;   /* pthread_self(), kept: a call per event less */

static __attribute__((noinline)) unsigned long my_pthread_first(void)
{
    return my_pthread = (unsigned long)pthread_self();
}

static inline __attribute__((always_inline)) int holder_is_me(void *tstate)
{
    if (thread_id_at != PY_NO_FIELD) {
        unsigned long me = my_pthread ? my_pthread : my_pthread_first();
        return FIELD(tstate, thread_id_at, unsigned long) == me;
    }
    return tstate == py.PyGILState_GetThisThreadState();
}

/* This thread's own thread state.  On 3.8-3.11 the "current" thread state is
 * global: it is the GIL holder's, whichever thread asks, and ours only if it
 * was made on this thread.  From 3.12 it is thread-local and NULL unless
 * this thread holds the GIL (then it is right in a subinterpreter too).
 * Without the GIL, the state bound to the thread by the GIL-state key.
 * PyGILState_Check is not used: it lies before initialisation and once a
 * subinterpreter exists.
 *
 * On 3.8-3.11 that key holds the first thread state made on the thread,
 * the main interpreter's, and nothing follows which one the thread runs:
 * PyEval_SaveThread leaves the state it released only in its caller's
 * local variable (the runtime's "current" is set to NULL, the GIL's
 * last_holder is overwritten by the next thread to take it).  A thread in a
 * subinterpreter (_xxsubinterpreters.run_string swaps its state in) that
 * released the GIL around a call (ctypes) was given the main interpreter's
 * frames: the line that called run_string, not the subinterpreter's code.
 * With no exact answer, no stack is recorded there while more than one
 * interpreter exists (new ones go to the head of the runtime's list, the
 * main one stays last: a pointer compare, nothing dereferenced); 3.12+
 * binds the state a thread runs to the key, and is right. */
static __attribute__((noinline)) void *own_tstate_released(void)
{
    if (py.minor < 12 && py.PyInterpreterState_Head() != py.PyInterpreterState_Main())
        return NULL;            /* a subinterpreter exists: which state is ours is unknown */
    return py.PyGILState_GetThisThreadState();   /* GIL released: our frames are still ours */
}

/* Inline in each capture, with the thread state's kind (global before
 * 3.12) a constant where the capture's layout says it: a call and about 10
 * instructions an event less (callgrind, churn_cycles on 3.11). */
static inline __attribute__((always_inline)) void *own_tstate_for(int global_tstate)
{
    if (!py.Py_IsInitialized())
        return NULL;            /* before attach, or finalising */
    void *tstate = py.current_tstate();
    /* The GIL held: ours.  Branches, not holder_is_me's answer tested
     * again (5 instructions). */
    if (tstate) {
        if (!global_tstate)
            return tstate;
        if (thread_id_at != PY_NO_FIELD) {
            /* my_pthread is 0 until this thread's first look, and no
             * thread's id is 0: tested only where the ids differ. */
            if (FIELD(tstate, thread_id_at, unsigned long) == my_pthread)
                return tstate;
            if (!my_pthread && FIELD(tstate, thread_id_at, unsigned long) == my_pthread_first())
                return tstate;          /* read again: nothing kept across the call */
        } else if (tstate == py.PyGILState_GetThisThreadState()) {
            return tstate;
        }
    }
    return own_tstate_released();
}

static void *own_tstate(void)
{
    return own_tstate_for(py.minor < 12);
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
    if (py.minor < 12 && !holder_is_me(tstate))
        return NULL;
    return tstate;
}

/* The raw frame that stands for the outer frames beyond the caller's room
 * (max): no code object is at address 1.  Interned as the format's frame
 * ending a stack cut short (TF_PY_CUT_FUNCTION), so a stack deeper than
 * the recorder keeps says it is not whole, where before it ended at its
 * 128th frame as if that one were the outermost (a recursion 300 deep lost
 * its main and <module> without a word). */
#define RAW_CUT 1

/* Whether a frame with Python code lies at f or outside it. */
static inline __attribute__((always_inline)) int code_frames_from(const py_layout *L, void *f,
                                                                  const void *code_type)
{
    for (; f; f = FIELD(f, L->frame_back, void *)) {
        if (L->frame_owner != PY_NO_FIELD && L->owner_cstack >= 0 &&
            FIELD(f, L->frame_owner, char) == L->owner_cstack)
            continue;
        void *code = FIELD(f, L->frame_code, void *);
        if (code && py_type_of(code) == code_type)
            return 1;
    }
    return 0;
}

/*
 * A raw frame's `where`: from 3.11 the frame's instruction pointer as the
 * frame holds it, not its offset in the code (a subtraction per frame
 * less in the walk, where most frames are only compared with the previous
 * event's); with the code object it names the same instruction, so it
 * serves as the stack tree's key as well.  The byte offset (f_lasti's in
 * bytes on 3.8-3.10, -2 or -1 before the first instruction) is made where
 * a frame is looked up.
 */
static inline int64_t raw_offset(const py_layout *L, uint64_t code, uint64_t where)
{
    if (L->instr_is_lasti)
        return (int64_t)where;
    return (int64_t)(where - (code + L->code_bytecode));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WALK_VECTORS 1
/* Where a frame's raw frame is its code and instruction pointer as they
 * lie, nothing else to look at (no type to check, no trampoline to leave
 * out): the pair may be moved without the fields passing through general
 * registers.  WALK_SPAN_FITS: the two are the first and last words of 32
 * bytes of the frame (3.11's f_code, frame_obj, previous, prev_instr),
 * all of them inside the frame, between two fields the walk reads. */
#define WALK_PAIR_LOADS(L) (!(L)->instr_is_lasti && (L)->code_always && !(L)->skip_unbegun_callers)
#define WALK_SPAN_FITS(L) ((L)->frame_instr == (L)->frame_code + 24 && (L)->frame_code % 8 == 0)
#else
#define WALK_VECTORS 0
#endif

/* One frame f of the walk: its raw frame stored at o, unless it holds no
 * Python code; where the next one goes.  span: 2 where the walk may load
 * 32 bytes at once (AVX2, WALK_SPAN_FITS), else 0. */
static inline __attribute__((always_inline)) rec_py_raw *walk_frame(const py_layout *L, void *f, rec_py_raw *o,
                                                                    const rec_py_raw *out, const void *code_type,
                                                                    int span)
{
    if (L->frame_owner != PY_NO_FIELD && L->owner_cstack >= 0 &&
        FIELD(f, L->frame_owner, char) == L->owner_cstack)
        return o;               /* shim frame of a C call: no Python code */
    void *code = FIELD(f, L->frame_code, void *);
    /* Where code_always says every frame the walk reaches names a code
     * object (a strong reference set before the frame is linked), it is
     * not NULL either: 2 instructions a frame less, about 24 an event
     * (churn_cycles on 3.11). */
    if (!L->code_always && (!code || py_type_of(code) != code_type))
        return o;
    /* The frame's current instruction as raw_where keeps it: f_lasti in
     * bytes, or the instruction pointer itself, made an offset only for the
     * frames intern looks up. */
    uint64_t where;
    if (L->instr_is_lasti)
        where = (uint64_t)((int64_t)FIELD(f, L->frame_instr, int) * L->lasti_unit);
    else
        where = (uint64_t)(uintptr_t)FIELD(f, L->frame_instr, char *);
    if (L->skip_unbegun_callers && o > out && where - ((uint64_t)(uintptr_t)code + L->code_bytecode) < 6)
        return o;               /* a trampoline under its callee (layout.h) */
#if WALK_VECTORS
    if (span == 2 && WALK_SPAN_FITS(L)) {
        /* The 32 bytes from the code to the instruction pointer loaded
         * with their words 0 and 3 moved to the low half, which is
         * stored: 2 instructions where the fields one by one are 4
         * (layout_3_11's).  Written out, not with intrinsics: this
         * function is also inlined where AVX is not enabled, and the
         * caller with span 2 clears the upper halves itself (vzeroupper:
         * the compiler does not see ymm0 used here). */
        __asm__("vpermq $0x0c, %1, %%ymm0\n\tvmovdqu %%xmm0, %0"
                : "=m"(*o)
                : "m"(*(const char(*)[32])((char *)f + L->frame_code))
                : "xmm0");
        return o + 1;
    }
    if (WALK_PAIR_LOADS(L)) {
        /* The code loaded to the low half of a vector, the instruction
         * pointer to its high half, the pair stored as one: 3 instructions
         * where the fields one by one are 4 (SSE2, any x86-64). */
        __m128i v = _mm_loadl_epi64((const __m128i *)((char *)f + L->frame_code));
        v = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(v), (const double *)((char *)f + L->frame_instr)));
        _mm_storeu_si128((__m128i *)o, v);
        return o + 1;
    }
#else
    (void)span;
#endif
    /* By pointer, each field stored on its own: indexed, with the pair
     * stored as one vector, a frame cost 20 instructions, 16 so. */
    o->code = (uint64_t)(uintptr_t)code;
    __asm__("" : "+m"(o->code));   /* no vector made of the pair to store it */
    o->where = where;
    return o + 1;
}

/*
 * The walk, written once and copied for each layout we know, with its
 * offsets as constants: the copy that reads them from the layout pays about
 * 28 instructions a frame, a specialised one about 16 (9 since it no longer
 * reads the code's type where code_always says it is one, nor makes the
 * instruction an offset, and compares its room once every 8 frames), and with every GC allocation traced an event
 * walks 11 to 14 frames (churn_cycles).  The generic copy serves any
 * interpreter whose walk fields match none of them.
 */
static inline __attribute__((always_inline)) int walk(const py_layout *L, void *tstate,
                                                      rec_py_raw *restrict out, int max, int span)
{
    /* Not read where code_always says the walk needs it not (the cut's
     * look reads it itself). */
    const void *code_type = L->code_always ? NULL : py.code_type;
    void *f;
    if (L->tstate_cframe != PY_NO_FIELD) {
        void *cframe = FIELD(tstate, L->tstate_cframe, void *);
        /* In a greenlet switch that C frame may be memory the switch
         * rewrote (python_greenlet.h): no stack rather than a fault. */
        if (__builtin_expect(python_greenlet_switching(), 0))
            return 0;
        f = cframe ? FIELD(cframe, L->cframe_frame, void *) : NULL;
    } else {
        f = FIELD(tstate, L->tstate_frame, void *);
    }
    /* Eight frames a round while there is room for eight: the room is
     * compared once a round, not at every frame. */
    if (__builtin_expect(max <= 0, 0))
        return 0;
    rec_py_raw *o = out, *const end = out + max;
    /* Where a round of eight may start (below out where max < 8): one
     * compare a round, not a subtraction and a compare (two rounds an
     * event in churn_cycles). */
    const uintptr_t last_round = (uintptr_t)end - 8 * sizeof *out;
#define WALK_STEP                                                     \
    do {                                                              \
        o = walk_frame(L, f, o, out, code_type, span);                    \
        f = FIELD(f, L->frame_back, void *);                          \
        if (!f)                                                       \
            goto walked;                                              \
    } while (0)
    /* Where every frame the walk reaches is kept (3.8-3.11: no shim
     * frames, code_always, no trampolines), the frames of a round go to
     * o[0..7] and o moves once a round, or at the way out: a frame an
     * instruction less, about 14 an event (churn_cycles on 3.11). */
#define WALK_AT(k)                                                    \
    do {                                                              \
        walk_frame(L, f, o + (k), out, code_type, span);                  \
        f = FIELD(f, L->frame_back, void *);                          \
        if (!f) {                                                     \
            /* here, not made before the test on every frame */       \
            __asm__ volatile("" : "+r"(o));                           \
            o += (k) + 1;                                             \
            goto walked;                                              \
        }                                                             \
    } while (0)
    if ((L->frame_owner == PY_NO_FIELD || L->owner_cstack < 0) && L->code_always && !L->skip_unbegun_callers) {
        while (f) {
            if ((uintptr_t)o <= last_round) {
                WALK_AT(0); WALK_AT(1); WALK_AT(2); WALK_AT(3);
                WALK_AT(4); WALK_AT(5); WALK_AT(6); WALK_AT(7);
                o += 8;
            } else {
                if (o == end)
                    break;
                WALK_AT(0);
                o++;
            }
        }
    } else {
        while (f) {
            if ((uintptr_t)o <= last_round) {
                WALK_STEP; WALK_STEP; WALK_STEP; WALK_STEP;
                WALK_STEP; WALK_STEP; WALK_STEP; WALK_STEP;
            } else {
                if (o == end)
                    break;
                WALK_STEP;
            }
        }
    }
#undef WALK_AT
#undef WALK_STEP
walked:;
    int n = (int)(o - out);
    /* No room for the rest: the outermost frame kept gives its place to
     * the cut (innermost frames are what says where an event came from). */
    if (__builtin_expect(f != NULL, 0) && n == max && max > 1 && code_frames_from(L, f, py.code_type))
        out[max - 1] = (rec_py_raw){ .code = RAW_CUT, .where = 0 };
    return n;
}

/*
 * The walk for an event that may come inside a greenlet switch of an
 * unwatched greenlet module (python_greenlet.h), where the thread state's
 * C frame may name bytes the switch copied there: nothing it follows is
 * read in place, everything through readable_gather (process_vm_readv of
 * ourselves: about 0.8 us a call here, against 9 instructions a frame for
 * walk), so it asks for much at once.  A frame's fields are read from a
 * copy of the CHECKED_WINDOW bytes below them (or, where those cannot all
 * be read, of those in their own page): 3.11+ pushes frames upward on its
 * data stack, so the frames of its callers are mostly in that copy
 * already.  The heads of the code objects (count, type, size) of
 * CHECKED_BATCH frames are copied in one call, each once a walk, and none
 * of those this thread found live before while no code object has died
 * since (live_codes).  A frame stands only where its code is a live code
 * object (its type, and a count a live object can have: a freed one's
 * first word is the allocator's free-list link) and its instruction lies
 * in that code; at the first that does not, or the first copy that fails,
 * the walk stops with the frames it has, and it visits at most
 * 4 * max + 64 frames (the bytes may make a cycle).  The frames kept are
 * real frames of live code: intern reads those as any.  About 5 KiB of
 * stack.
 */
#define CHECKED_SPAN_MAX 128
#define CHECKED_WINDOW 3072
#define CHECKED_BATCH 16
#define LIVE_REFS_MAX ((int64_t)1 << 32)   /* 3.12's immortal count is 2^32 - 1 */

static size_t span_lo, span_len;    /* the frame fields walk_checked reads; 0: none */

static void span_of(const py_layout *L)
{
    size_t lo = SIZE_MAX, hi = 0;
    const size_t fields[][2] = {
        { L->frame_code, sizeof(void *) },
        { L->frame_back, sizeof(void *) },
        { L->frame_instr, L->instr_is_lasti ? sizeof(int) : sizeof(char *) },
        { L->frame_owner, 1 },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i][0] == PY_NO_FIELD)
            continue;
        if (fields[i][0] < lo)
            lo = fields[i][0];
        if (fields[i][0] + fields[i][1] > hi)
            hi = fields[i][0] + fields[i][1];
    }
    span_lo = lo;
    span_len = hi > lo && hi - lo <= CHECKED_SPAN_MAX ? hi - lo : 0;
}

/* The last copy of memory below a frame: [lo, hi) of the program's. */
typedef struct frame_window {
    uintptr_t lo, hi;
    unsigned char bytes[CHECKED_WINDOW + CHECKED_SPAN_MAX];
} frame_window;

/* The span of frame f's fields, from the window or a new copy that ends
 * with it; NULL where it cannot be read. */
static const unsigned char *span_at(frame_window *w, uintptr_t f)
{
    uintptr_t a = f + span_lo, end = a + span_len;
    if (a < f || end < a)
        return NULL;
    if (a >= w->lo && end <= w->hi)
        return w->bytes + (a - w->lo);
    /* CHECKED_WINDOW bytes below, where they can be read; else those of
     * the frame's own page (readable where the frame is). */
    uintptr_t lo = a > CHECKED_WINDOW ? a - CHECKED_WINDOW : 0;
    readable_piece piece = { .dst = w->bytes, .src = (const void *)lo, .len = end - lo };
    if (readable_gather(&piece, 1) != 1) {
        uintptr_t page = a & ~(uintptr_t)4095;
        if (page <= lo)
            return NULL;        /* that was within the frame's page */
        lo = page;
        piece = (readable_piece){ .dst = w->bytes, .src = (const void *)lo, .len = end - lo };
        if (readable_gather(&piece, 1) != 1)
            return NULL;
    }
    w->lo = lo;
    w->hi = end;
    return w->bytes + (a - lo);
}

static inline void *span_ptr(const unsigned char *span, size_t off)
{
    void *v;
    memcpy(&v, span + (off - span_lo), sizeof v);
    return v;
}

/* A frame with code, its code's head not read yet. */
typedef struct pending_frame {
    void *code;
    int64_t where;
    int64_t head[3];           /* ob_refcnt, ob_type, ob_size */
} pending_frame;

/* Code objects walk_checked found live on this thread, by address hash,
 * and how many code objects had died then (code_deaths_count): as long as
 * none has died since, they all still live, and their heads are not asked
 * for again (the stacks of a program's events repeat).  A death is counted
 * before its memory goes back.  In the thread's path mapping (below); a
 * signal handler's event nested in a walk may find an entry half written:
 * its address is a live code's either way, only its size may be another's
 * (a line looked up from a wrong offset at worst). */
#define LIVE_CODES 64u
typedef struct live_codes {
    uint64_t deaths;
    struct { void *code; int64_t size; } at[LIVE_CODES];
} live_codes;
static live_codes *live_codes_get(void);

static inline uint32_t live_slot(const void *code)
{
    return (uint32_t)(((uintptr_t)code * 0x9E3779B97F4A7C15ull) >> 58) & (LIVE_CODES - 1);
}

/* Whether a frame stands (above). */
static int live_frame(const py_layout *L, const pending_frame *p)
{
    if (p->head[0] < 1 || p->head[0] > LIVE_REFS_MAX || (const void *)(uintptr_t)p->head[1] != py.code_type)
        return 0;
    /* -2: before the first instruction; the code's size counts 2-byte
     * units (3.11+, whose code objects are variable-sized). */
    return p->where >= -2 && p->where <= INT32_MAX &&
           (L->instr_is_lasti || (p->head[2] >= 0 && p->head[2] <= INT32_MAX && p->where < 2 * p->head[2]));
}

static int walk_checked(const py_layout *L, void *tstate, rec_py_raw *restrict out, int max)
{
    if (!span_len || python_greenlet_switching())
        return 0;
    /* The thread state is ours and sound; what its C frame names may not be. */
    void *cframe = FIELD(tstate, L->tstate_cframe, void *), *first = NULL;
    if (!cframe || readable_gather(&(readable_piece){ .dst = &first, .src = (char *)cframe + L->cframe_frame,
                                                      .len = sizeof first }, 1) != 1)
        return 0;
    uintptr_t f = (uintptr_t)first;
    frame_window w = { .lo = 0, .hi = 0 };
    pending_frame pend[CHECKED_BATCH];
    live_codes *live = code_deaths_watching() ? live_codes_get() : NULL;
    if (live) {
        uint64_t deaths = code_deaths_count();
        if (live->deaths != deaths) {
            memset(live->at, 0, sizeof live->at);
            live->deaths = deaths;
        }
    }
    int n = 0, visits = 0, limit = 4 * max + 64;
    while (f && visits < limit) {
        /* The next frames with code, as many as may be kept (one more
         * says whether the stack is cut). */
        int k = 0, stop = 0;
        while (f && k < CHECKED_BATCH && n + k <= max && visits < limit) {
            const unsigned char *span = span_at(&w, f);
            if (!span) {
                stop = 1;
                break;
            }
            visits++;
            f = (uintptr_t)span_ptr(span, L->frame_back);
            if (L->frame_owner != PY_NO_FIELD && L->owner_cstack >= 0 &&
                (signed char)span[L->frame_owner - span_lo] == L->owner_cstack)
                continue;       /* shim frame of a C call: no Python code */
            void *code = span_ptr(span, L->frame_code);
            if (!code) {
                stop = 1;       /* no real frame of 3.11/3.12 has none */
                break;
            }
            int64_t where;
            if (L->instr_is_lasti) {
                int lasti;
                memcpy(&lasti, span + (L->frame_instr - span_lo), sizeof lasti);
                where = (int64_t)lasti * L->lasti_unit;
            } else {
                where = (int64_t)((uintptr_t)span_ptr(span, L->frame_instr) -
                                  ((uintptr_t)code + L->code_bytecode));
            }
            pend[k++] = (pending_frame){ .code = code, .where = where };
        }
        /* Each code object's head is asked for once (a recursion's frames
         * share theirs), and not at all where it is known live. */
        readable_piece heads[CHECKED_BATCH];
        int asked[CHECKED_BATCH], m = 0;
        for (int i = 0; i < k; i++) {
            asked[i] = -1;
            uint32_t h = live_slot(pend[i].code);
            if (live && live->at[h].code == pend[i].code) {
                pend[i].head[0] = 1;
                pend[i].head[1] = (int64_t)(uintptr_t)py.code_type;
                pend[i].head[2] = live->at[h].size;
                continue;
            }
            for (int j = 0; j < i && asked[i] < 0; j++)
                if (pend[j].code == pend[i].code)
                    asked[i] = asked[j];
            if (asked[i] < 0) {
                asked[i] = m;
                heads[m++] = (readable_piece){ .dst = pend[i].head, .src = pend[i].code, .len = sizeof pend[i].head };
            }
        }
        int got = m ? readable_gather(heads, m) : 0;
        for (int i = 0; i < k; i++) {
            if (asked[i] >= got)
                return n;
            if (asked[i] >= 0 && heads[asked[i]].dst != pend[i].head)
                memcpy(pend[i].head, heads[asked[i]].dst, sizeof pend[i].head);
            if (!live_frame(L, &pend[i]))
                return n;
            if (asked[i] >= 0 && live) {
                uint32_t h = live_slot(pend[i].code);
                live->at[h].code = pend[i].code;
                live->at[h].size = pend[i].head[2];
            }
            if (n == max) {
                /* A frame with code beyond the room: the cut, as walk's. */
                if (max > 1)
                    out[max - 1] = (rec_py_raw){ .code = RAW_CUT, .where = 0 };
                return n;
            }
            if (L->skip_unbegun_callers && n > 0 && pend[i].where < 6)
                continue;       /* a trampoline under its callee (layout.h) */
            uint64_t code = (uint64_t)(uintptr_t)pend[i].code;
            out[n++] = (rec_py_raw){ .code = code,
                                     .where = L->instr_is_lasti ? (uint64_t)pend[i].where
                                                                : code + L->code_bytecode + (uint64_t)pend[i].where };
        }
        if (stop)
            break;
    }
    return n;
}

/* 3.13 publishes its offsets (python_layout.c); these are the walk's as
 * release builds of 3.13.0 publish them, used only where they match. */
static const py_layout layout_3_13 = {
    .tstate_frame = 72, .tstate_cframe = PY_NO_FIELD, .cframe_frame = PY_NO_FIELD,
    .frame_code = 0, .frame_back = 8, .frame_instr = 56, .frame_owner = 70,
    .owner_cstack = 3, .skip_unbegun_callers = 1, .code_bytecode = 200,
};

/* global_tstate: whether the "current" thread state is the GIL holder's,
 * whichever thread asks (3.8-3.11), where the layout says the version. */
#define CAPTURE_FOR(name, table, global_tstate)                     \
    static int name(rec_py_raw *restrict out, int max)             \
    {                                                              \
        void *tstate = own_tstate_for(global_tstate);              \
        return tstate ? walk(table, tstate, out, max, 0) : 0;      \
    }
CAPTURE_FOR(capture_any, layout, py.minor < 12)
CAPTURE_FOR(capture_3_8, &layout_3_8, 1)
CAPTURE_FOR(capture_3_9, &layout_3_9, 1)
CAPTURE_FOR(capture_3_10, &layout_3_10, 1)
CAPTURE_FOR(capture_3_11, &layout_3_11, 1)
CAPTURE_FOR(capture_3_12, &layout_3_12, 0)
CAPTURE_FOR(capture_3_13, &layout_3_13, 0)

#if WALK_VECTORS
/* &_PyRuntime where python_stack_install saw its `initialized` and
 * gilstate.tstate_current (PY_RUNTIME_3_11_*, checked against the
 * headers by tests/python/layout_check.c) hold Py_IsInitialized's and
 * _PyThreadState_UncheckedGet's answers, on 3.11 with thread_id_at its
 * layout's; else NULL and capture_3_11_avx2 is not used. */
static const char *runtime_3_11;

/* 3.11's capture where the CPU has AVX2 and runtime_3_11 is known
 * (python_stack_install): a frame of the walk 5 instructions, not 6
 * (walk_frame's span); the usual event's thread state, the GIL holder's
 * made on this thread, read in place where the two calls of
 * own_tstate_for return it, and anything else (not initialised, the GIL
 * not held, another thread's state, this thread's first event) goes
 * capture_3_11's whole way.  With no call on its own way this function
 * saves no register: 17 instructions an event less (callgrind,
 * churn_cycles 0.1). */
static __attribute__((target("avx2"))) int capture_3_11_avx2(rec_py_raw *restrict out, int max)
{
    const char *rt = runtime_3_11;
    void *tstate = __atomic_load_n((void *const *)(rt + PY_RUNTIME_3_11_TSTATE_CURRENT), __ATOMIC_RELAXED);
    /* my_pthread is 0 until this thread's first look, and no thread's id
     * is 0 (own_tstate_for) */
    if (__builtin_expect(!*(const int *)(rt + PY_RUNTIME_3_11_INITIALIZED) || !tstate ||
                             FIELD(tstate, layout_3_11.tstate_thread_id, unsigned long) != my_pthread,
                         0))
        return capture_3_11(out, max);
    int n = walk(&layout_3_11, tstate, out, max, 2);
    _mm256_zeroupper();        /* after walk_frame's ymm0 */
    return n;
}

/* Whether capture_3_11_avx2 may read this interpreter's _PyRuntime in
 * place (runtime_3_11).  With the GIL, on the thread whose state is
 * current (python_stack_install), once thread_id_at is known. */
static int runtime_3_11_seen(void)
{
    runtime_3_11 = NULL;
    if (py.minor != 11 || thread_id_at != layout_3_11.tstate_thread_id)
        return 0;
    const char *rt = py_sym("_PyRuntime");
    void *tstate = py.current_tstate();
    if (!rt || !tstate || py.Py_IsInitialized() != 1 || *(const int *)(rt + PY_RUNTIME_3_11_INITIALIZED) != 1 ||
        *(void *const *)(rt + PY_RUNTIME_3_11_TSTATE_CURRENT) != tstate)
        return 0;
    runtime_3_11 = rt;
    return 1;
}
#endif

/* The fields the walk reads, and only those, are the same. */
static int same_walk(const py_layout *a, const py_layout *b)
{
    return a->tstate_frame == b->tstate_frame && a->tstate_cframe == b->tstate_cframe &&
           a->cframe_frame == b->cframe_frame && a->frame_code == b->frame_code &&
           a->frame_back == b->frame_back && a->frame_instr == b->frame_instr &&
           a->frame_owner == b->frame_owner && a->owner_cstack == b->owner_cstack &&
           a->skip_unbegun_callers == b->skip_unbegun_callers && a->code_always == b->code_always &&
           a->instr_is_lasti == b->instr_is_lasti && a->lasti_unit == b->lasti_unit &&
           (a->instr_is_lasti || a->code_bytecode == b->code_bytecode);
}

static int (*pick_capture(const py_layout *running))(rec_py_raw *restrict, int)
{
    static const struct {
        const py_layout *layout;
        int (*capture)(rec_py_raw *restrict, int);
        int global_tstate;      /* as its CAPTURE_FOR says */
    } known[] = {
        { &layout_3_8, capture_3_8, 1 },
        { &layout_3_9, capture_3_9, 1 },
        { &layout_3_10, capture_3_10, 1 },
        { &layout_3_11, capture_3_11, 1 },
        { &layout_3_12, capture_3_12, 0 },
        { &layout_3_13, capture_3_13, 0 },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (same_walk(running, known[i].layout) && known[i].global_tstate == (py.minor < 12))
            return known[i].capture;
    return capture_any;
}

/* Direct-mapped caches, used only under the recorder's lock.  A code object
 * may die and its address be reused, by a code object with other file,
 * name or lines (and often with its strings at the dead ones' addresses
 * too): each death empties the code's entry (python_code_deaths.c), and a
 * line entry holds the serial of the code entry it was made with, so it
 * cannot outlive it: a serial names one code entry (they are not given
 * twice; when they wrap, line entries and cursors are emptied), so a line
 * entry needs no code address of its own.  12 bytes instead of 32 keep the
 * pages a short process touches fewer (its look-ups fall all over the
 * table).  A new writer, a new segment or a fork empties all. */
#define CODE_CACHE 4096u
#define LINE_CACHE 8192u
typedef struct code_entry { uintptr_t code; uint32_t id, serial; } code_entry;
typedef struct line_entry { uint32_t serial; int32_t where; int32_t line; } line_entry;
static code_entry code_cache[CODE_CACHE];
static line_entry line_cache[LINE_CACHE];
static int caches_used;        /* an entry was made since they were last cleared */
static uint32_t last_serial;
static tf_writer *cached_for;
static uint32_t cached_epoch;  /* the writer forgets its ids at each segment */
static uint64_t buried;        /* code deaths already applied to the caches */

static uint32_t slot_of(uintptr_t key, uint64_t salt, uint32_t size)
{
    return (uint32_t)(((key ^ (salt << 17)) * 0x9E3779B97F4A7C15ull) >> 40) & (size - 1);
}

/* A code object's file or function name.  Under the recorder's lock, so
 * one buffer: as long as a path can be (PATH_MAX), and a longer name is cut
 * with a visible "..." (cut silently, a path 1390 bytes long read as a
 * directory 'd' a third of the way down). */
#define NAME_MAX_BYTES 4096
static char name_buf[NAME_MAX_BYTES + 3];

static uint32_t intern_text(tf_writer *w, void *str)
{
    int cut = 0;
    size_t n = py_text_utf8(layout, str, name_buf, NAME_MAX_BYTES, &cut);
    if (n && cut) {
        memcpy(name_buf + n, "...", 3);
        n += 3;
    }
    return n ? tf_write_string(w, name_buf, n) : tf_write_string(w, "?", 1);
}

static uint32_t intern_code(tf_writer *w, void *code)
{
    int first_line = FIELD(code, layout->code_firstlineno, int);
    return tf_write_py_code(w, intern_text(w, FIELD(code, layout->code_filename, void *)),
                            intern_text(w, FIELD(code, layout->code_name, void *)),
                            first_line > 0 ? (uint32_t)first_line : 0);
}

static void forget_lines(void);

/* The live code object's entry.  With `cached` 0 (deaths are not watched)
 * nothing is kept: a scratch entry is filled every time. */
static const code_entry *code_of(tf_writer *w, void *code, int cached)
{
    static code_entry scratch;
    code_entry *e = cached ? &code_cache[slot_of((uintptr_t)code, 0, CODE_CACHE)] : &scratch;
    if (cached && e->code == (uintptr_t)code)
        return e;
    if (++last_serial == 0) {
        forget_lines();
        ++last_serial;
    }
    uint32_t serial = last_serial;
    if (cached)
        caches_used = 1;
    *e = (code_entry){ .code = (uintptr_t)code, .id = intern_code(w, code), .serial = serial };
    return e;
}

/* Where the last look-up of a line in a code object left off in its table
 * (python_lines.h), by code entry serial: a serial is never given twice,
 * so a cursor cannot outlive the entry it was made for.  Apart from the
 * code entries: 16 bytes more in each of those was 48 more page faults in
 * a bare start of 3.11, most code objects' lines being looked up once or
 * twice. */
#define CURSORS 256u
typedef struct cursor_entry { uintptr_t code; uint32_t serial; py_line_cursor cursor; } cursor_entry;
static cursor_entry cursors[CURSORS];

static void forget_lines(void)
{
    memset(line_cache, 0, sizeof line_cache);
    memset(cursors, 0, sizeof cursors);
}

static py_line_cursor *cursor_of(const code_entry *c)
{
    cursor_entry *e = &cursors[slot_of(c->code, 0, CURSORS)];
    if (e->code != c->code || e->serial != c->serial)
        *e = (cursor_entry){ .code = c->code, .serial = c->serial, .cursor = PY_LINE_CURSOR_NEW };
    return &e->cursor;
}

#define BYTES_SIZE 16           /* offsetof(PyBytesObject, ob_size) */
#define BYTES_DATA 32           /* offsetof(PyBytesObject, ob_sval) */

/* PyCode_Addr2Line's answer, from the table itself where it is a bytes
 * object of a format we know (python_lines.h says why). */
static int code_line(void *code, int where, py_line_cursor *cursor)
{
    void *table = layout->line_format ? FIELD(code, layout->code_linetable, void *) : NULL;
    if (table && py.bytes_type && py_type_of(table) == py.bytes_type) {
        int64_t size = FIELD(table, BYTES_SIZE, int64_t);
        if (size >= 0 && size <= INT32_MAX)
            return py_line_find(layout->line_format, (const uint8_t *)table + BYTES_DATA, (uint32_t)size,
                                FIELD(code, layout->code_firstlineno, int), where, cursor);
    }
    return py.PyCode_Addr2Line(code, where);
}

static int line_of(void *code, const code_entry *c, int64_t where, int cached)
{
    line_entry *e = &line_cache[slot_of((uintptr_t)code, (uint64_t)where, LINE_CACHE)];
    cached = cached && where >= INT32_MIN && where <= INT32_MAX;
    if (cached && e->serial == c->serial && e->where == where)
        return e->line;
    /* Before the first instruction, or on one with no line (3.11+'s
     * prologue), the frame is at its first line. */
    int line = where < 0 ? -1 : code_line(code, (int)where, cursor_of(c));
    if (line <= 0)
        line = FIELD(code, layout->code_firstlineno, int);
    if (cached) {
        caches_used = 1;
        *e = (line_entry){ .serial = c->serial, .where = (int32_t)where, .line = line };
    }
    return line;
}

/* Code deaths by address hash, for the stack tree below: the number of the
 * last death at an address of each slot, plus one. */
#define DEATH_SLOTS 4096u
static uint64_t death_at[DEATH_SLOTS];
/* Bumped whenever the tree is emptied or code deaths are applied: a
 * thread's path made under another value shares no frame (intern).  One
 * word for the two compares of path_generation and buried at every event;
 * never reused (64 bits). */
static uint64_t path_valid = 1;
static void path_forget_all(void);

static void forget_caches(void)
{
    /* Not while still empty (the first intern of a process): clearing
     * would fault in all 80 pages of them for nothing. */
    if (caches_used) {
        memset(code_cache, 0, sizeof code_cache);
        memset(line_cache, 0, sizeof line_cache);
        caches_used = 0;
    }
    path_forget_all();
}

/* Apply the code deaths since the last call, up to `now`, to the caches. */
static void bury(uint64_t now)
{
    path_valid++;
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
        death_at[slot_of(dead, 0, DEATH_SLOTS)] = buried + 1;
    }
}

/*
 * The stacks met so far, as a tree: a node is a frame (code object,
 * instruction offset) below the node of the frames outside it, and holds
 * that frame's (code id, line) and, once an event has had it innermost, the
 * id of the stack from the outermost frame down to it.  Each thread keeps
 * the path of its previous stack (the frames and their nodes, outermost
 * first): an event compares its frames with that path from the outermost,
 * takes the nodes of the frames that match, and looks up only the frames
 * within (a loop's callers stay put while its innermost frames move), so
 * most events cost a compare per frame and a look-up or two, whichever of
 * the stacks met before they have.  bench/workloads/churn_cycles, which
 * builds trees by recursion through list comprehensions, meets 1054 stacks
 * 11 to 14 frames deep; a memo of 64 whole stacks before this missed on 7 %
 * of its events, each miss costing about 3600 instructions (callgrind,
 * churn_cycles 0.1 on 3.11 with TRACE_PY_ALLOCS=1).
 *
 * The key is read afresh at every event, per frame the code object and the
 * instruction offset.  Frame addresses are not part of it: CPython reuses
 * them (the frame free lists of 3.8-3.10, the data stack from 3.11), so
 * the same address says nothing about which call it is.  A code object may
 * die and another be made at its address: a node made before a death at
 * its code's address (death_at, by address hash: a collision only makes a
 * node again) is made again in place with a new stamp, and a node's
 * children name their parent by stamp, never reused, so the dead frame's
 * subtree is unreachable from then on; a thread whose path is older than
 * the last death it has seen looks every frame up again.
 *
 * Used only under the recorder's lock (intern runs there).  The tree is
 * emptied when it is three quarters full, with the caches (a new writer, a
 * new segment, a fork, deaths no longer known): path_generation.  A
 * thread's path is mapped at its first stack (not static TLS: libtrace.so
 * may be loaded late, where static TLS is scarce) and unmapped at its exit;
 * a signal handler recording an event on the same thread cannot meet it
 * half written (its event is dropped before capture).  Stacks deeper than
 * PATH_FRAMES take the caches' path every time.
 */
#define PATH_NODES 16384u             /* a power of two */
#define PATH_FULL (PATH_NODES / 4 * 3)
#define PATH_SLOTS_MAX (PATH_NODES * 4)
#define PATH_FRAMES 128
typedef struct path_node {
    uint64_t parent;           /* stamp of the node outside it; 0: outermost */
    uintptr_t code;
    int64_t where;
    uint64_t stamp;            /* never reused */
    uint64_t born;             /* code deaths applied when it was made */
    tf_py_frame frame;
    uint32_t id;               /* the stack ending here; 0: not asked yet */
} __attribute__((aligned(64))) path_node;   /* a node's index a shift from its address: 56 bytes cost
                                             * 3 instructions each time, 3 or 4 times an event */
/* The nodes in the order they were made (path_count of them), found by a
 * hash table of their numbers: a process touches the pages of the nodes it
 * made, one after another, and of the table's slots it used (8 bytes
 * each), not a page of 56-byte nodes per frame spread over the whole table
 * (about 300 page faults, 1.2 MiB, in a bare `python -c pass`).  The slot
 * table starts at 1024 slots (static, 8 KiB) and doubles into mapped
 * memory whenever it would pass a quarter full, up to PATH_SLOTS_MAX
 * (which the tree fills to 3/16): a few hundred nodes hashed over 16384
 * slots touched all 32 pages of them (60 of a short process's page
 * faults), a table sized to them touches two.  Grown only past half
 * full, churn_cycles 0.05 on 3.11 (1,546 nodes over 4,096 slots) read
 * 1.8 slots a look-up (linear probing); a quarter full, with
 * path_promote, one. */
typedef struct path_slot {
    uint32_t node;
    uint32_t generation;       /* path_generation; else empty */
} path_slot;
#define PATH_SLOTS_FIRST 1024u
#define PATH_SLOTS_ROOMY(nodes, slots) ((nodes) * 4 <= (slots) || (slots) >= PATH_SLOTS_MAX)
static path_slot path_slots_first[PATH_SLOTS_FIRST];
static path_slot *path_slots = path_slots_first;
static uint32_t path_slot_count = PATH_SLOTS_FIRST;   /* a power of two */
static path_node path_tree[PATH_FULL];
static uint32_t path_count;
/* The most nodes the tree may hold before path_make_room must run: PATH_FULL,
 * or fewer while the slot table can still grow (PATH_SLOTS_ROOMY); one
 * compare an event. */
static uint32_t path_count_max = PATH_SLOTS_FIRST / 4;
static uint32_t path_generation = 1;
static uint64_t path_stamps;

typedef struct py_path {
    uint64_t valid;            /* path_valid when it was made; 0: none */
    int n;                     /* frames of the previous stack */
    /* The frames, innermost first as captured, ending at the array's end:
     * frame j from the outermost is raw[PATH_FRAMES - 1 - j], so the frames
     * a stack shares with the previous one lie at the same place whatever
     * its depth (shared_outer). */
    rec_py_raw raw[PATH_FRAMES];
    uint32_t node[PATH_FRAMES];      /* each frame's node */
    live_codes live;                 /* walk_checked's */
} py_path;

TLS py_path *path;
TLS int path_failed;
static pthread_key_t path_key;
static int path_key_ok;

static void release_path(void *p)
{
    path = NULL;
    path_failed = 1;           /* events later in the thread's exit go without */
    munmap(p, sizeof(py_path));
}

static py_path *path_get(void)
{
    if (path || path_failed)
        return path;
    path_failed = 1;
    if (!path_key_ok)
        return NULL;
    void *p = mmap(NULL, sizeof(py_path), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(path_key, p) != 0) {
        munmap(p, sizeof(py_path));
        return NULL;
    }
    path_failed = 0;
    path = p;                  /* zeroed: valid 0 matches no tree */
    return path;
}

static live_codes *live_codes_get(void)
{
    py_path *p = path_get();
    return p ? &p->live : NULL;
}

static void path_forget_all(void)
{
    path_generation = path_generation + 1 ? path_generation + 1 : 1;
    path_valid++;
    path_count = 0;
}

/* The node of frame (code, where) below the node stamped `parent`: found,
 * made again when its code may have died since, or made. */
static uint32_t path_home(uint64_t parent, uintptr_t code, int64_t where, uint32_t slots)
{
    /* One multiply, not three: the parent's stamp, spread over the word
     * when made (path_child), added to the code keeps the code's high bits
     * from cancelling those of its instruction pointer (3.11+'s where). */
    uint64_t h = ((parent + code) ^ (uint64_t)where) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h >> 40) & (slots - 1);
}

/* Doubles the slot table and puts every node in again (the nodes are the
 * table's whole content); 0 when there is no memory for it (the caller
 * then empties the tree).  Past the first, static table, the slots live in
 * one mapping of PATH_SLOTS_MAX slots, reserved at the first doubling and used
 * from its start: a doubling clears the part in use and hashes the nodes
 * over twice as much, so the pages touched are those of the largest table
 * used, not of every size on the way.  Mapped with the host-buffer hooks
 * kept out, as block_marks.c does. */
static path_slot *path_slots_mapped;

static int path_grow(void)
{
    uint32_t count = path_slot_count * 2;
    if (!path_slots_mapped) {
        host_guard_enter();
        void *p = mmap(NULL, PATH_SLOTS_MAX * sizeof(path_slot), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        host_guard_leave();
        if (p == MAP_FAILED)
            return 0;
        path_slots_mapped = p;      /* zeroed: generation 0 is no tree's */
    } else {
        memset(path_slots_mapped, 0, path_slot_count * sizeof(path_slot));
    }
    path_slot *slots = path_slots_mapped;
    for (uint32_t j = 0; j < path_count; j++) {
        const path_node *e = &path_tree[j];
        uint32_t i = path_home(e->parent, e->code, e->where, count);
        while (slots[i].generation == path_generation)
            i = (i + 1) & (count - 1);
        slots[i] = (path_slot){ .node = j, .generation = path_generation };
    }
    path_slots = slots;
    path_slot_count = count;
    path_count_max = count >= PATH_SLOTS_MAX || count / 4 > PATH_FULL ? PATH_FULL : count / 4;
    return 1;
}

/* A raw frame as the log names it: its code's id and line, or the cut. */
static tf_py_frame frame_of(tf_writer *w, uintptr_t code, int64_t where, int cached)
{
    if (code == RAW_CUT)
        return (tf_py_frame){ .code = tf_write_py_cut_code(w), .line = 0 };
    const code_entry *c = code_of(w, (void *)code, cached);
    int line = line_of((void *)code, c, raw_offset(layout, code, (uint64_t)where), cached);
    return (tf_py_frame){ .code = c->id, .line = line > 0 ? (uint32_t)line : 0 };
}

static __attribute__((noinline)) uint32_t path_child(tf_writer *w, uint64_t parent, uintptr_t code,
                                                     int64_t where)
{
    uint32_t mask = path_slot_count - 1;
    uint32_t i = path_home(parent, code, where, path_slot_count);
    path_node *e;
    for (;; i = (i + 1) & mask) {
        path_slot *slot = &path_slots[i];
        if (slot->generation != path_generation) {
            /* intern keeps path_count + the frames to come <= PATH_FULL */
            *slot = (path_slot){ .node = path_count++, .generation = path_generation };
            e = &path_tree[slot->node];
            break;
        }
        e = &path_tree[slot->node];
        if (e->parent == parent && e->code == code && e->where == where) {
            /* No death applied since it was made, or none at its code's
             * address. */
            if (e->born == buried || death_at[slot_of(code, 0, DEATH_SLOTS)] <= e->born)
                return slot->node;
            break;              /* a code object at this address died since */
        }
    }
    /* The count spread over the word (an odd multiplier: still never
     * reused, and 0 only for no parent), so path_home need not. */
    *e = (path_node){ .parent = parent, .code = code, .where = where, .stamp = ++path_stamps * 0x9E3779B97F4A7C15ull,
                      .born = buried, .frame = frame_of(w, code, where, 1) };
    return (uint32_t)(e - path_tree);
}

/* A node found away from its home slot trades places with the node
 * there: that one stays reachable (it sat at or after its own home, and
 * every slot from there to i is in use: nothing is ever taken out but all
 * at once), and the nodes looked up most end up found at their home.  In
 * churn_cycles 0.05 on 3.11 (1,546 nodes over 8,192 slots) a look-up read
 * 1.56 slots without, as hashing the nodes in the order made predicts
 * 1.12. */
static __attribute__((noinline)) void path_promote(uint32_t home, uint32_t i)
{
    path_slot moved = path_slots[home];
    path_slots[home] = path_slots[i];
    path_slots[i] = moved;
}

/* path_child's usual answer, inline: a node found with no death applied
 * since it was made.  Anything else (a node to make, or one whose code
 * may have died) goes to path_child, which looks again. */
static inline __attribute__((always_inline)) uint32_t path_find(tf_writer *w, uint64_t parent, uintptr_t code,
                                                                int64_t where)
{
    const path_slot *slots = path_slots;
    uint32_t mask = path_slot_count - 1, generation = path_generation;
    uint32_t home = path_home(parent, code, where, mask + 1);
    for (uint32_t i = home;; i = (i + 1) & mask) {
        path_slot slot = slots[i];
        if (slot.generation != generation)
            break;
        const path_node *e = &path_tree[slot.node];
        if (e->parent == parent && e->code == code && e->where == where) {
            if (e->born != buried)
                break;
            if (__builtin_expect(i != home, 0))
                path_promote(home, i);
            return slot.node;
        }
    }
    return path_child(w, parent, code, where);
}

/* The id of the stack whose frames' nodes are nodes[0..n), outermost first.
 * A node's stack is its frame called from its parent's (a push), so a new
 * stack costs the writer a look-up for each node without an id yet, from the
 * innermost one that has one, and one PY_STACK_CHAIN record for the frames
 * not defined under their callers before: the frames a new stack shares with
 * stacks met before cost nothing.  Whole-stack records cost the depth every
 * time instead (importing sympy on 3.11, 88,980 new stacks 48 frames deep on
 * average: 150 bytes of records before compression and about 2,600
 * instructions each, against 118,637 pushed frames of about 400). */
static __attribute__((noinline)) uint32_t path_stack_define(tf_writer *w, const uint32_t *nodes, int n)
{
    path_node *inner = &path_tree[nodes[n - 1]];
    int j = n - 1;
    while (j > 0 && !path_tree[nodes[j - 1]].id)
        j--;
    uint32_t outer = j ? path_tree[nodes[j - 1]].id : 0;
    uint32_t m = (uint32_t)(n - j), ids[PATH_FRAMES];
    tf_py_frame frames[PATH_FRAMES];    /* innermost first */
    frames[0] = inner->frame;
    ids[0] = 0;
    for (uint32_t k = 1; k < m; k++) {
        frames[k] = path_tree[nodes[n - 1 - k]].frame;
        ids[k] = 0;
    }
    uint32_t id = tf_write_py_stack_push(w, outer, frames, m, ids);
    /* Out of memory part way: the stacks defined are kept, the others asked
     * for again next time. */
    for (uint32_t k = 0; k < m; k++)
        path_tree[nodes[n - 1 - k]].id = ids[k];
    return id;
}

/* Nearly always the innermost node has its id already. */
static inline uint32_t path_stack_id(tf_writer *w, const uint32_t *nodes, int n)
{
    uint32_t id = path_tree[nodes[n - 1]].id;
    return id ? id : path_stack_define(w, nodes, n);
}

/* The stack's ids, each frame looked up in the caches (no tree). */
static uint32_t intern_fresh(tf_writer *w, const rec_py_raw *raw, int n, int cached)
{
    tf_py_frame frames[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        frames[i] = frame_of(w, (uintptr_t)raw[i].code, (int64_t)raw[i].where, cached);
    return tf_write_py_stack(w, frames, (uint32_t)n);
}

/* The direct-mapped tables' pages, faulted in by one system call at the
 * process's first stack (tf_pages_prefault): their look-ups fall all over
 * them, and each page is read (a miss) before it is written.  pyenv's 3.11
 * touched all 50 pages of them in `python -c pass`, 87 of its 380 added
 * page faults. */
static void prefault_caches(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    tf_pages_prefault(code_cache, sizeof code_cache);
    tf_pages_prefault(line_cache, sizeof line_cache);
    tf_pages_prefault(cursors, sizeof cursors);
    tf_pages_prefault(death_at, sizeof death_at);
}

/* How many frames, from the outermost, the stack raw[0..n) (innermost
 * first, as captured) shares with the thread's previous one, m frames
 * ending at prev_end (its layout: py_path's tail).  Both have their
 * outermost frame last, so the frames that match are the two arrays'
 * common tail: one compare of all but the innermost frame of the shorter
 * (same_before) answers the usual event, whose stack differs from the
 * previous one only there (a frame called or returned, or the innermost
 * frame moved on), where a compare a frame at a time from the outermost
 * cost about 10 instructions a frame (churn_cycles: 12 frames, 11 shared);
 * else, or then for that last frame, a frame at a time.  same_before:
 * memcmp (shared_outer), or none (shared_outer_loop); intern_avx2 has its
 * own (shared_outer_avx2). */
#define SHARED_OUTER(raw, n, prev_end, m, same_before)                      \
    ({                                                                      \
        int k_ = ((n) < (m) ? (n) : (m)) - 1, same_;                       \
        const rec_py_raw *a_ = (raw) + (n), *b_ = (prev_end);               \
        if (k_ > 0 && same_before(a_, b_, k_)) {                            \
            a_ -= k_ + 1;                                                   \
            b_ -= k_ + 1;                                                   \
            same_ = k_ + (a_->code == b_->code && a_->where == b_->where);  \
        } else {                                                            \
            const rec_py_raw *stop_ = b_ - (k_ + 1);                        \
            while (b_ > stop_ && a_[-1].code == b_[-1].code && a_[-1].where == b_[-1].where) \
                a_--, b_--;                                                 \
            same_ = (int)((prev_end) - b_);                                 \
        }                                                                   \
        same_;                                                              \
    })

/* Below SHARED_MEMCMP_MIN frames the loop alone: the call costs about 55
 * (threaded's stacks, 4.6 frames an event, cost more with memcmp at every
 * depth than without it). */
#define SHARED_MEMCMP_MIN 4
static inline __attribute__((always_inline)) int same_before_memcmp(const rec_py_raw *a, const rec_py_raw *b, int k)
{
    return k >= SHARED_MEMCMP_MIN && memcmp(a - k, b - k, (size_t)k * sizeof *a) == 0;
}

static inline __attribute__((always_inline)) int shared_outer(const rec_py_raw *raw, int n,
                                                              const rec_py_raw *prev_end, int m)
{
    return SHARED_OUTER(raw, n, prev_end, m, same_before_memcmp);
}

/* A frame at a time from the outermost. */
static inline __attribute__((always_inline)) int same_before_none(const rec_py_raw *a, const rec_py_raw *b, int k)
{
    (void)a, (void)b, (void)k;
    return 0;
}

static inline __attribute__((always_inline)) int shared_outer_loop(const rec_py_raw *raw, int n,
                                                                   const rec_py_raw *prev_end, int m)
{
    return SHARED_OUTER(raw, n, prev_end, m, same_before_none);
}

/*
 * Whole stacks met lately, in front of the tree: an event whose frames are
 * those of an entry made under the current path_valid takes that entry's
 * stack id, with no compare against the thread's path and no tree
 * look-up: intern 226 -> 145 instructions an event, new stacks' tree work
 * included (churn_cycles 0.1 on 3.11, callgrind: 14 frames deep, most
 * stacks differing from the previous event's only innermost, 10 stacks
 * 89 % of the events).  An entry is made from the tree's
 * answer, once the stack has its id; it holds the raw frames themselves,
 * and a hit is a compare of all of them (the slot is picked by the
 * innermost two frames and the depth, which many stacks may share: the
 * compare, never the slot, says the stack is the same).  path_valid is
 * bumped whenever the tree would no longer give that id for those frames
 * (the tree emptied: a new writer or segment, a fork, deaths no longer
 * known; code deaths applied), so an entry made under another value is
 * empty.  The path is not moved on a hit: it stays a stack of this thread
 * with its nodes, the frames it shares with the next stack the tree looks
 * up still theirs.  Stacks deeper than STACK_CACHE_FRAMES are not kept.
 * Used only under the recorder's lock; in BSS, its pages touched as
 * entries are made and looked at, all over the table: 256 entries (128
 * KiB).  With 1024, python -c pass on 3.11.7 with TRACE_PY_ALLOCS=1 had
 * 257 more page faults than without the cache (3,415 -> 3,672: a page is
 * read, then written), with 512 127, with 256 66, with 128 34; churn_cycles
 * 0.1 (callgrind) 967.9, 971.0, 970.5 and 978.8 M instructions.  Faulting
 * the table in at the first stack, as the tables above, cost 128 faults at
 * default settings too.  Default settings: 2,289 -> 2,292.
 */
#define STACK_CACHE_BITS 8
#define STACK_CACHE (1u << STACK_CACHE_BITS)
#define STACK_CACHE_FRAMES 31
typedef struct stack_entry {
    uint64_t valid;            /* path_valid when made; 0: none */
    uint32_t n, id;
    rec_py_raw raw[STACK_CACHE_FRAMES];    /* innermost first, as captured */
} stack_entry;                 /* 512 bytes: an entry's address a shift from its slot */
static stack_entry stack_cache[STACK_CACHE];

/* The slot of the stack raw[0..n): by its innermost two frames (the one
 * frame where n is 1) and its depth. */
static inline __attribute__((always_inline)) uint64_t stack_key(const rec_py_raw *raw, int n)
{
    const rec_py_raw *r1 = n > 1 ? raw + 1 : raw;
    return (raw[0].code + raw[0].where) ^ ((r1->code + r1->where) << 21) ^ (uint64_t)n * 0x61C88647u;
}

static inline __attribute__((always_inline)) stack_entry *stack_entry_of(const rec_py_raw *raw, int n)
{
    /* The top bits of a multiply.  The depth is multiplied too: xor'ed in
     * alone, it cancelled the low bits of an instruction pointer (3.11+'s
     * where), and churn_cycles' stacks 18 and 8 frames deep met in a slot,
     * a miss every time (a quarter of its events). */
    return &stack_cache[(stack_key(raw, n) * 0x9E3779B97F4A7C15ull) >> (64 - STACK_CACHE_BITS)];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define INTERN_AVX2 1
/* The differences of the 4 frames at a and at b, or'ed. */
static inline __attribute__((always_inline, target("avx2"))) __m256i differ4(const char *a, const char *b)
{
    return _mm256_or_si256(
        _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)a), _mm256_loadu_si256((const __m256i *)b)),
        _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + 32)), _mm256_loadu_si256((const __m256i *)(b + 32))));
}

/* shared_outer with the k frames before the innermost of the shorter stack
 * compared four at a time (two 32-byte loads, compares and or's) from the
 * innermost of them out, the outermost four last (k is not always a
 * multiple of four: they may be compared twice), and tested once; then
 * that innermost frame.  memcmp cost 44 instructions an event and its
 * call about 20 more (churn_cycles 0.05 on 3.11, 12 frames). */
static inline __attribute__((always_inline, target("avx2"))) int shared_outer_avx2(const rec_py_raw *raw, int n,
                                                                                 const rec_py_raw *prev_end, int m)
{
    int k = (n < m ? n : m) - 1;
    if (k < 1)
        return shared_outer_loop(raw, n, prev_end, m);
    const char *ea = (const char *)(raw + n), *eb = (const char *)prev_end;
    long off = -(long)k * (long)sizeof *raw;       /* the innermost of the k */
    if (k >= 4) {
        __m256i acc = differ4(ea + off, eb + off);
        for (long o = off + 64; o < -64; o += 64)
            acc = _mm256_or_si256(acc, differ4(ea + o, eb + o));
        acc = _mm256_or_si256(acc, differ4(ea - 64, eb - 64));
        if (!_mm256_testz_si256(acc, acc))
            return shared_outer_loop(raw, n, prev_end, m);
    } else if (k >= 2) {
        __m256i acc = _mm256_or_si256(
            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(ea + off)),
                             _mm256_loadu_si256((const __m256i *)(eb + off))),
            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(ea - 32)),
                             _mm256_loadu_si256((const __m256i *)(eb - 32))));
        if (!_mm256_testz_si256(acc, acc))
            return shared_outer_loop(raw, n, prev_end, m);
    } else {
        __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(ea - 16)),
                                  _mm_loadu_si128((const __m128i *)(eb - 16)));
        if (!_mm_testz_si128(d, d))
            return shared_outer_loop(raw, n, prev_end, m);
    }
    const rec_py_raw *x = (const rec_py_raw *)(ea + off) - 1, *y = (const rec_py_raw *)(eb + off) - 1;
    return x->code == y->code && x->where == y->where ? k + 1 : k;
}
/* How the n frames at a and at b differ, or'ed (all zero: the same; 1 <=
 * n <= STACK_CACHE_FRAMES): two at a time, the first two, then pairs from the
 * innermost end back (with n odd the last pair overlaps the first), one
 * load, xor and or each, unrolled by the count.  A loop of four at a
 * time cost 54 instructions an event (churn_cycles 0.1 on 3.11, 13 to 14
 * frames), this about 26. */
#define PAIR_DIFFERS(x, y, off)                                                                 \
    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)((x) + (off))),                        \
                     _mm256_loadu_si256((const __m256i *)((y) + (off))))
static inline __attribute__((always_inline, target("avx2"))) __m256i frames_differ_avx2(const rec_py_raw *a,
                                                                                      const rec_py_raw *b, int n)
{
    const char *x = (const char *)a, *y = (const char *)b;
    if (n < 2)                 /* the upper half zero: one test for both ways */
        return _mm256_zextsi128_si256(
            _mm_xor_si128(_mm_loadu_si128((const __m128i *)x), _mm_loadu_si128((const __m128i *)y)));
    const char *ex = x + (long)n * (long)sizeof *a, *ey = y + (long)n * (long)sizeof *b;
    __m256i acc = PAIR_DIFFERS(x, y, 0);
    switch ((n - 1) / 2) {     /* the pairs after the first */
#if STACK_CACHE_FRAMES > 32
#error "same_frames_avx2 unrolls STACK_CACHE_FRAMES <= 32"
#endif
    case 15: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -480)); /* fall through */
    case 14: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -448)); /* fall through */
    case 13: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -416)); /* fall through */
    case 12: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -384)); /* fall through */
    case 11: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -352)); /* fall through */
    case 10: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -320)); /* fall through */
    case 9: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -288)); /* fall through */
    case 8: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -256)); /* fall through */
    case 7: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -224)); /* fall through */
    case 6: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -192)); /* fall through */
    case 5: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -160)); /* fall through */
    case 4: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -128)); /* fall through */
    case 3: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -96));  /* fall through */
    case 2: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -64));  /* fall through */
    case 1: acc = _mm256_or_si256(acc, PAIR_DIFFERS(ex, ey, -32));  /* fall through */
    default: break;
    }
    return acc;
}
#undef PAIR_DIFFERS
#else
#define INTERN_AVX2 0
#endif

/* Room in the tree for the nodes of the frames same..n: the slot table
 * grown, or the tree emptied (then no frame is shared).  Kept out of
 * intern, whose every event would otherwise pay for its registers. */
static __attribute__((noinline)) int path_make_room(int n, int same)
{
    if (path_count + (uint32_t)(n - same) > PATH_FULL) {
        path_forget_all();
        same = 0;
    }
    while (!PATH_SLOTS_ROOMY(path_count + (uint32_t)(n - same), path_slot_count))
        if (!path_grow()) {
            path_forget_all();
            same = 0;
            break;
        }
    return same;
}

/* intern once the checks at its entry have passed (the path p is this
 * thread's, the caches are for w, no code death is left to apply) and the
 * frames the previous stack shares from the outermost are known (0 where
 * the tree was emptied or a code object died since it was made). */
static inline __attribute__((always_inline)) uint32_t intern_rest(tf_writer *w, const rec_py_raw *raw, int n,
                                                                  py_path *p, int same)
{
    p->n = n;
    if (same == n)
        return path_stack_id(w, p->node, n);
    /* Room for the nodes to come (only a stack with new frames makes
     * any); emptying the tree drops the shared nodes too. */
    if (__builtin_expect(path_count + (uint32_t)(n - same) > path_count_max, 0))
        same = path_make_room(n, same);
    /* Each new frame below the node of the one outside it, the parent's
     * stamp carried from one to the next; usually one frame, the
     * innermost, whose loop costs more than the frame.  A path sharing
     * frames was made under path_valid already (and path_make_room
     * shares none once it bumps it). */
    rec_py_raw *keep = p->raw + PATH_FRAMES - 1;     /* frame j at keep - j */
    uint64_t parent = 0;
    if (same)
        parent = path_tree[p->node[same - 1]].stamp;
    else
        p->valid = path_valid;
    uint32_t node;
    if (__builtin_expect(same == n - 1, 1)) {
        keep[-same] = raw[0];
        node = path_find(w, parent, (uintptr_t)raw[0].code, (int64_t)raw[0].where);
        p->node[same] = node;
    } else {
        const rec_py_raw *f = raw + (n - 1 - same);
        node = 0;
        for (int j = same; j < n; j++, f--) {
            keep[-j] = *f;
            node = path_find(w, parent, (uintptr_t)f->code, (int64_t)f->where);
            p->node[j] = node;
            parent = path_tree[node].stamp;
        }
    }
    uint32_t id = path_tree[node].id;
    return id ? id : path_stack_define(w, p->node, n);
}

/* intern's entry when one of its checks fails: a new writer or segment,
 * code deaths to apply, no path yet, a stack deeper than a path. */
static __attribute__((noinline)) uint32_t intern_entry(tf_writer *w, const rec_py_raw *raw, int n)
{
    if (w != cached_for || tf_writer_epoch(w) != cached_epoch) {
        prefault_caches();
        forget_caches();
        cached_for = w;
        cached_epoch = tf_writer_epoch(w);
    }
    /* Another tool replaced the code type's deallocator after us: deaths
     * are no longer seen, so nothing cached can be trusted. */
    if (!code_deaths_watching())
        return intern_fresh(w, raw, n, 0);
    uint64_t deaths = code_deaths_count();
    if (deaths != buried)
        bury(deaths);
    py_path *p = n <= PATH_FRAMES ? path_get() : NULL;
    if (!p)
        return intern_fresh(w, raw, n, 1);
    return intern_rest(w, raw, n, p, p->valid == path_valid ? shared_outer(raw, n, p->raw + PATH_FRAMES, p->n) : 0);
}

/* The checks of intern_entry but those of the path (INTERN_TREE), all at
 * once: each event pays for them, and nearly every one passes them all. */
static inline __attribute__((always_inline)) int intern_caches_ready(tf_writer *w)
{
    return __builtin_expect(w == cached_for && tf_writer_epoch(w) == cached_epoch && code_deaths_watching() &&
                                code_deaths_count() == buried,
                            1);
}

/* The tree's answer once intern_caches_ready has passed, kept in e
 * (stack_entry_of's for the frames, or NULL where the stack is not to be
 * kept) once it is an id.  The checks are not made again: a stack deeper
 * than the cache keeps pays for them once, as before it. */
#define INTERN_TREE(w, raw, n, e, shared)                                                       \
    ({                                                                                          \
        py_path *p_ = path;                                                                     \
        uint32_t id_;                                                                           \
        if (__builtin_expect(!p_ || (n) > PATH_FRAMES, 0)) {                                    \
            id_ = intern_entry(w, raw, n);                                                      \
        } else {                                                                                \
            int same_ = 0;                                                                      \
            if (p_->valid == path_valid)                                                        \
                same_ = shared(raw, n, p_->raw + PATH_FRAMES, p_->n);                           \
            id_ = intern_rest(w, raw, n, p_, same_);                                            \
            if ((e) && id_) {                                                                   \
                (e)->valid = path_valid;                                                        \
                (e)->n = (uint32_t)(n);                                                         \
                (e)->id = id_;                                                                  \
                memcpy((e)->raw, raw, (size_t)(n) * sizeof *(raw));                            \
            }                                                                                   \
        }                                                                                       \
        id_;                                                                                    \
    })

static __attribute__((noinline)) uint32_t intern_tree(tf_writer *w, const rec_py_raw *raw, int n, stack_entry *e)
{
    return INTERN_TREE(w, raw, n, e, shared_outer);
}

/* A stack met lately takes its entry's id; the others the tree's, and
 * every stack where a check fails intern_entry's.  Out of line, the
 * tree's look-up does not make the usual event save and restore its
 * registers (about 20 instructions). */
static uint32_t intern(tf_writer *w, const rec_py_raw *raw, int n)
{
    if (!intern_caches_ready(w))
        return intern_entry(w, raw, n);
    stack_entry *e = NULL;
    if (n <= STACK_CACHE_FRAMES) {
        e = stack_entry_of(raw, n);
        if (e->valid == path_valid && e->n == (uint32_t)n && memcmp(e->raw, raw, (size_t)n * sizeof *raw) == 0)
            return e->id;
    }
    return intern_tree(w, raw, n, e);
}

#if INTERN_AVX2
/* intern where the CPU has AVX2 (python_stack_install): the compares
 * inline (shared_outer_avx2: called, it cost 18 instructions an event
 * more; frames_differ_avx2). */
static __attribute__((noinline, target("avx2"))) uint32_t intern_tree_avx2(tf_writer *w, const rec_py_raw *raw,
                                                                           int n, stack_entry *e)
{
    return INTERN_TREE(w, raw, n, e, shared_outer_avx2);
}

/* A stack the whole-stack cache did not answer: its entry found again
 * (about 20 instructions, on 1 event in 130 in churn_cycles), so that
 * intern_avx2 need not keep it for the call, nor the registers that made
 * it: its frame and the save of a register, 5 instructions an event. */
static __attribute__((noinline, target("avx2"))) uint32_t intern_miss_avx2(tf_writer *w, const rec_py_raw *raw,
                                                                           int n)
{
    return intern_tree_avx2(w, raw, n, n <= STACK_CACHE_FRAMES ? stack_entry_of(raw, n) : NULL);
}

static __attribute__((target("avx2"))) uint32_t intern_avx2(tf_writer *w, const rec_py_raw *raw, int n)
{
    if (!intern_caches_ready(w))
        return intern_entry(w, raw, n);
    if (n <= STACK_CACHE_FRAMES) {
        const stack_entry *e = stack_entry_of(raw, n);
        if (e->n == (uint32_t)n && e->valid == path_valid) {
            __m256i d = frames_differ_avx2(e->raw, raw, n);
            if (_mm256_testz_si256(d, d))
                return e->id;
        }
    }
    return intern_miss_avx2(w, raw, n);
}
#endif

static rec_py_provider provider;

/* A large host block release (python_greenlet.h): the fast walk unless an
 * unwatched greenlet module was loaded and the thread state's C frame is
 * on the C stack (3.11, 3.12). */
static int capture_checked(rec_py_raw *restrict out, int max)
{
    if (__builtin_expect(!python_greenlet_unwatched(), 1) || layout->tstate_cframe == PY_NO_FIELD)
        return provider.capture(out, max);
    void *tstate = own_tstate();
    return tstate ? walk_checked(layout, tstate, out, max) : 0;
}

static rec_py_provider provider = { capture_any, capture_checked, intern };

int python_stack_install(void)
{
    layout = py_layout_get();
    if (!layout || !code_deaths_install())
        return 0;
    if (!path_key_ok)
        path_key_ok = pthread_key_create(&path_key, release_path) == 0;
    pthread_atfork(NULL, NULL, forget_caches);
    /* Called with the GIL, on the thread whose state is current. */
    void *tstate = py.minor < 12 ? py.current_tstate() : NULL;
    thread_id_at = tstate && layout->tstate_thread_id != PY_NO_FIELD &&
                   tstate == py.PyGILState_GetThisThreadState() &&
                   FIELD(tstate, layout->tstate_thread_id, unsigned long) == (unsigned long)pthread_self()
                       ? layout->tstate_thread_id : PY_NO_FIELD;
    provider.capture = pick_capture(layout);
#if INTERN_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && !trace_config_get()->cpu_baseline) {   /* TRACE_CPU_FEATURES */
        provider.intern = intern_avx2;
        if (provider.capture == capture_3_11 && runtime_3_11_seen())
            provider.capture = capture_3_11_avx2;
    }
#endif
    span_of(layout);
    rec_set_py_provider(&provider);
    return 1;
}
