/*
 * layout_check.c - the offsets in preload/python_layout_tables.h (and the
 * frame walk's 3.13 constants in python_stack.c) against the headers of the
 * interpreter this is compiled for.  test_layout.py compiles it once per
 * interpreter found, with that interpreter's include directory, its
 * internal headers and Py_BUILD_CORE, and runs it: it prints each field
 * that differs and exits 1.  A wrong offset is a wrong stack in every log
 * (or a crash in the traced process), so each one is checked here rather
 * than inferred from a stack test that happens to pass.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>

#include <stdio.h>

#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#else
#include <internal/pycore_pystate.h>
#endif

#include "python_layout_tables.h"

static int failed;

static void check(const char *field, size_t ours, size_t theirs)
{
    if (ours == theirs)
        return;
    printf("%s: ours %zu, headers %zu\n", field, ours, theirs);
    failed = 1;
}

#define CHECK(field, expr) check(#field, L->field, (size_t)(expr))

int main(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    /* 3.13: python_layout.c reads the interpreter's debug offsets; the
     * frame walk is specialised to these (python_stack.c). */
    const struct { size_t tstate_frame, frame_code, frame_back, frame_instr, frame_owner, code_bytecode; }
        walk_3_13 = { 72, 0, 8, 56, 70, 200 }, *L = &walk_3_13;
    CHECK(tstate_frame, offsetof(PyThreadState, current_frame));
    CHECK(frame_code, offsetof(_PyInterpreterFrame, f_executable));
    CHECK(frame_back, offsetof(_PyInterpreterFrame, previous));
    CHECK(frame_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    CHECK(frame_owner, offsetof(_PyInterpreterFrame, owner));
    CHECK(code_bytecode, offsetof(PyCodeObject, co_code_adaptive));
    check("owner_cstack", 3, FRAME_OWNED_BY_CSTACK);
    /* python_layout.c: generations[0].count, 44 bytes into the gc state */
    check("gc_young_count - gc", 44, offsetof(struct _gc_runtime_state, generations[0].count));
#else
#if PY_VERSION_HEX >= 0x030C0000
    const py_layout *L = &layout_3_12;
#elif PY_VERSION_HEX >= 0x030B0000
    const py_layout *L = &layout_3_11;
#elif PY_VERSION_HEX >= 0x030A0000
    const py_layout *L = &layout_3_10;
#elif PY_VERSION_HEX >= 0x03090000
    const py_layout *L = &layout_3_9;
#else
    const py_layout *L = &layout_3_8;
#endif

#if PY_VERSION_HEX >= 0x030B0000
    CHECK(tstate_cframe, offsetof(PyThreadState, cframe));
    CHECK(cframe_frame, offsetof(_PyCFrame, current_frame));
    CHECK(frame_back, offsetof(_PyInterpreterFrame, previous));
    CHECK(frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
    CHECK(frame_owner, offsetof(_PyInterpreterFrame, owner));
    CHECK(frame_code, offsetof(_PyInterpreterFrame, f_code));
    CHECK(code_bytecode, offsetof(PyCodeObject, co_code_adaptive));
    CHECK(code_name, offsetof(PyCodeObject, co_qualname));
#if PY_VERSION_HEX >= 0x030C0000
    check("owner_cstack", (size_t)L->owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
    /* python_stack.c's capture_3_11_avx2 reads these two in place */
    check("_PyRuntime.initialized", PY_RUNTIME_3_11_INITIALIZED, offsetof(_PyRuntimeState, initialized));
    check("_PyRuntime.gilstate.tstate_current", PY_RUNTIME_3_11_TSTATE_CURRENT,
          offsetof(_PyRuntimeState, gilstate.tstate_current));
#endif
#else
    CHECK(tstate_frame, offsetof(PyThreadState, frame));
    CHECK(frame_code, offsetof(PyFrameObject, f_code));
    CHECK(frame_back, offsetof(PyFrameObject, f_back));
    CHECK(frame_instr, offsetof(PyFrameObject, f_lasti));
    CHECK(code_name, offsetof(PyCodeObject, co_name));
#endif
    CHECK(code_filename, offsetof(PyCodeObject, co_filename));
    CHECK(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
    CHECK(code_linetable, offsetof(PyCodeObject, co_linetable));
    check("line_format", (size_t)L->line_format,
          PY_VERSION_HEX >= 0x030B0000 ? PY_LINES_LOCATIONS : PY_LINES_310);
#else
    CHECK(code_linetable, offsetof(PyCodeObject, co_lnotab));
    check("line_format", (size_t)L->line_format, PY_LINES_LNOTAB);
#endif

    CHECK(str_length, offsetof(PyASCIIObject, length));
    CHECK(str_state, offsetof(PyASCIIObject, state));
    CHECK(ascii_size, sizeof(PyASCIIObject));
    CHECK(compact_size, sizeof(PyCompactUnicodeObject));
    CHECK(compact_utf8, offsetof(PyCompactUnicodeObject, utf8));
    CHECK(compact_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));

    CHECK(tstate_interp, offsetof(PyThreadState, interp));
    CHECK(tstate_thread_id, offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x03090000
    CHECK(gc_young_count, offsetof(PyInterpreterState, gc.generations[0].count));
#else
    CHECK(gc_young_count, offsetof(_PyRuntimeState, gc.generations[0].count));
#endif
#endif
    /* python_gc.c: the collecting flag and the two lists, placed by the young count */
#define GC_FIELD(f) offsetof(struct _gc_runtime_state, f)
    check("gc collecting - young count", PY_GC_COLLECTING_FROM_YOUNG,
          GC_FIELD(collecting) - GC_FIELD(generations[0].count));
    check("gc garbage - collecting", PY_GC_GARBAGE_FROM_COLLECTING, GC_FIELD(garbage) - GC_FIELD(collecting));
    check("gc callbacks - collecting", PY_GC_CALLBACKS_FROM_COLLECTING,
          GC_FIELD(callbacks) - GC_FIELD(collecting));
    /* python_stack.c reads line tables in place: BYTES_SIZE, BYTES_DATA */
    check("bytes ob_size", 16, offsetof(PyBytesObject, ob_base.ob_size));
    check("bytes ob_sval", 32, offsetof(PyBytesObject, ob_sval));
    if (!failed)
        printf("%d.%d: every offset matches\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    return failed;
}
