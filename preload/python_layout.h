/*
 * python_layout.h - where the fields we read live in this interpreter's
 * structures.  3.13 publishes them in _PyRuntime.debug_offsets; 3.8 to 3.12
 * need our own per-version tables (python_layout_tables.h, checked against
 * each version's headers by tests/python/layout_check.c).
 */
#ifndef TRACE_PYTHON_LAYOUT_H
#define TRACE_PYTHON_LAYOUT_H

#include <stddef.h>

#define PY_NO_FIELD ((size_t)-1)

typedef struct py_layout {
    /* Thread state -> innermost frame: tstate[frame] on 3.8-3.10 (a
     * PyFrameObject) and 3.13 (an interpreter frame); on 3.11/3.12 through the
     * C frame, tstate[cframe][cframe_frame]. */
    size_t tstate_frame, tstate_cframe, cframe_frame;
    /* Frame fields.  instr is f_lasti (int) on 3.8-3.10, else a pointer to
     * the current instruction; owner is PY_NO_FIELD where frames of C calls
     * do not exist. */
    size_t frame_code, frame_back, frame_instr, frame_owner;
    int instr_is_lasti;        /* f_lasti (an int) rather than a pointer */
    int lasti_unit;            /* bytes per f_lasti step: 1 (3.8/3.9), 2 (3.10) */
    int owner_cstack;          /* owner value of C-stack shim frames, -1 if none */
    /* A frame with a callee whose instruction is still in the first 3 code
     * units is a trampoline or not begun (3.13: _Py_InitCleanup, the shim a
     * specialised class call puts under __init__): left out, as CPython's
     * tracebacks leave out such "incomplete" frames. */
    int skip_unbegun_callers;
    /* frame_code names a code object in every frame the walk reaches (the
     * f_code of 3.8-3.12's frames, a strong reference set before the frame
     * is linked), so the walk need not read the object's type; 3.13's
     * f_executable may be None or another object. */
    int code_always;
    /* Code objects.  linetable: co_lnotab (3.8, 3.9) or co_linetable, a
     * bytes object in the format line_format names (python_lines.h). */
    size_t code_filename, code_name, code_firstlineno, code_bytecode, code_linetable;
    int line_format;
    /* str objects: PyASCIIObject size, PyCompactUnicodeObject size, the
     * cached UTF-8 pointer and its length. */
    size_t str_length, str_state, ascii_size, compact_size, compact_utf8, compact_utf8_length;
    /* The young generation's count (interp->gc.generations[0].count): in the
     * interpreter state, tstate[tstate_interp] + gc_young_count, or from 3.8's
     * _PyRuntime + gc_young_count when gc_in_runtime. */
    size_t tstate_interp, gc_young_count;
    int gc_in_runtime;
    /* The rest of struct _gc_runtime_state read (python_gc.c) is placed by
     * the young count: the same struct from 3.8 to 3.13 (PY_GC_*). */
    /* PyThreadState.thread_id: pthread_self() of the thread it was made on
     * (python_stack.c's own_tstate, 3.8-3.11). */
    size_t tstate_thread_id;
} py_layout;

/* In struct _gc_runtime_state, from 3.8 to 3.13: gc.collecting follows
 * generations[0].count by the rest of generations[3], generation0,
 * permanent_generation and generation_stats[3]; the garbage and callbacks
 * lists follow collecting.  tests/python/layout_check.c checks them. */
#define PY_GC_COLLECTING_FROM_YOUNG 156
#define PY_GC_GARBAGE_FROM_COLLECTING 8
#define PY_GC_CALLBACKS_FROM_COLLECTING 16

/* The layout of the running interpreter (py.minor known); NULL if unknown. */
const py_layout *py_layout_get(void);

#endif
