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
    void *bound = py.PyGILState_GetThisThreadState();
    void *tstate = py.current_tstate();
    if (tstate && (py.minor >= 12 || tstate == bound))
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

static int capture(rec_py_raw *out, int max)
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
 * may die and its address be reused: entries are checked against the code's
 * name objects and first line, and a miss only costs a re-intern (the writer
 * interns by content).  A new writer (after fork) empties them. */
#define CODE_CACHE 4096u
#define LINE_CACHE 8192u
typedef struct code_entry { uintptr_t code, file, name; int first_line; uint32_t id; } code_entry;
typedef struct line_entry { uintptr_t code; int64_t where; uint32_t code_id; int line; } line_entry;
static code_entry code_cache[CODE_CACHE];
static line_entry line_cache[LINE_CACHE];
static tf_writer *cached_for;
static uint32_t cached_epoch;  /* the writer forgets its ids at each segment */

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

static uint32_t code_id(tf_writer *w, void *code)
{
    uintptr_t file = FIELD(code, layout->code_filename, uintptr_t);
    uintptr_t name = FIELD(code, layout->code_name, uintptr_t);
    int first_line = FIELD(code, layout->code_firstlineno, int);
    code_entry *e = &code_cache[slot_of((uintptr_t)code, 0, CODE_CACHE)];
    if (e->code == (uintptr_t)code && e->file == file && e->name == name &&
        e->first_line == first_line)
        return e->id;
    uint32_t id = tf_write_py_code(w, intern_text(w, (void *)file), intern_text(w, (void *)name),
                                   first_line > 0 ? (uint32_t)first_line : 0);
    *e = (code_entry){ (uintptr_t)code, file, name, first_line, id };
    return id;
}

/* code_id tells a reused address from the code object that lived there. */
static int line_of(void *code, uint32_t code_id, int64_t where)
{
    line_entry *e = &line_cache[slot_of((uintptr_t)code, (uint64_t)where, LINE_CACHE)];
    if (e->code == (uintptr_t)code && e->where == where && e->code_id == code_id)
        return e->line;
    /* Before the first instruction, or on one with no line (3.11+'s
     * prologue), the frame is at its first line. */
    int line = where < 0 ? -1 : py.PyCode_Addr2Line(code, (int)where);
    if (line <= 0)
        line = FIELD(code, layout->code_firstlineno, int);
    *e = (line_entry){ (uintptr_t)code, where, code_id, line };
    return line;
}

static void forget_caches(void)
{
    memset(code_cache, 0, sizeof code_cache);
    memset(line_cache, 0, sizeof line_cache);
}

static uint32_t intern(tf_writer *w, const rec_py_raw *raw, int n)
{
    if (w != cached_for || tf_writer_epoch(w) != cached_epoch) {
        forget_caches();
        cached_for = w;
        cached_epoch = tf_writer_epoch(w);
    }
    tf_py_frame frames[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) {
        void *code = (void *)(uintptr_t)raw[i].code;
        frames[i].code = code_id(w, code);
        int line = line_of(code, frames[i].code, (int64_t)raw[i].where);
        frames[i].line = line > 0 ? (uint32_t)line : 0;
    }
    return tf_write_py_stack(w, frames, (uint32_t)n);
}

static const rec_py_provider provider = { capture, intern };

int python_stack_install(void)
{
    layout = py_layout_get();
    if (!layout)
        return 0;
    pthread_atfork(NULL, NULL, forget_caches);
    rec_set_py_provider(&provider);
    return 1;
}
