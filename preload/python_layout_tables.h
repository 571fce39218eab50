/*
 * python_layout_tables.h - the layouts of 3.8 to 3.12 (LP64, from each
 * version's headers; tests/python/layout_check.c checks them), for
 * python_layout.c and for the frame walk's copies specialised to them
 * (python_stack.c).  3.13's come from the interpreter (python_layout.c).
 */
#ifndef TRACE_PYTHON_LAYOUT_TABLES_H
#define TRACE_PYTHON_LAYOUT_TABLES_H

#include "python_layout.h"
#include "python_lines.h"

#define FRAME_OBJECTS(lasti_offset, unit, lines) \
    .tstate_frame = 24, .tstate_cframe = PY_NO_FIELD, .cframe_frame = PY_NO_FIELD, \
    .frame_code = 32, .frame_back = 24, .frame_instr = lasti_offset, \
    .frame_owner = PY_NO_FIELD, .instr_is_lasti = 1, .lasti_unit = unit, .owner_cstack = -1, \
    .code_always = 1, \
    .code_filename = 104, .code_name = 112, .code_firstlineno = 40, .code_bytecode = PY_NO_FIELD, \
    .code_linetable = 120, .line_format = lines

#define STR_WITH_WSTR \
    .str_length = 16, .str_state = 32, .ascii_size = 48, .compact_size = 72, \
    .compact_utf8 = 56, .compact_utf8_length = 48
#define STR_WITHOUT_WSTR \
    .str_length = 16, .str_state = 32, .ascii_size = 40, .compact_size = 56, \
    .compact_utf8 = 48, .compact_utf8_length = 40

#define GC_COUNT(offset) .tstate_interp = 16, .gc_young_count = offset

static const py_layout layout_3_8 = {
    FRAME_OBJECTS(104, 1, PY_LINES_LNOTAB), STR_WITH_WSTR, GC_COUNT(388), .gc_in_runtime = 1,
    .tstate_thread_id = 176
};
static const py_layout layout_3_9 = {
    FRAME_OBJECTS(104, 1, PY_LINES_LNOTAB), STR_WITH_WSTR, GC_COUNT(660), .tstate_thread_id = 176
};
static const py_layout layout_3_10 = {
    FRAME_OBJECTS(96, 2, PY_LINES_310), STR_WITH_WSTR, GC_COUNT(660), .tstate_thread_id = 176
};

static const py_layout layout_3_11 = {
    .tstate_frame = PY_NO_FIELD, .tstate_cframe = 56, .cframe_frame = 8,
    .frame_code = 32, .frame_back = 48, .frame_instr = 56, .frame_owner = 69,
    .owner_cstack = -1, .code_always = 1,
    .code_filename = 112, .code_name = 128 /* co_qualname */, .code_firstlineno = 72,
    .code_bytecode = 184, .code_linetable = 136, .line_format = PY_LINES_LOCATIONS,
    STR_WITH_WSTR, GC_COUNT(692), .tstate_thread_id = 152
};

/* 3.11's _PyRuntime: `initialized` (Py_IsInitialized's answer) and
 * gilstate.tstate_current (_PyThreadState_UncheckedGet's), read in place
 * by python_stack.c's capture_3_11_avx2 where it saw them right at
 * install. */
#define PY_RUNTIME_3_11_INITIALIZED 16
#define PY_RUNTIME_3_11_TSTATE_CURRENT 576

static const py_layout layout_3_12 = {
    .tstate_frame = PY_NO_FIELD, .tstate_cframe = 56, .cframe_frame = 0,
    .frame_code = 0, .frame_back = 8, .frame_instr = 56, .frame_owner = 70,
    .owner_cstack = 3, .code_always = 1,
    .code_filename = 112, .code_name = 128, .code_firstlineno = 68, .code_bytecode = 192,
    .code_linetable = 136, .line_format = PY_LINES_LOCATIONS,
    STR_WITHOUT_WSTR, GC_COUNT(156), .tstate_thread_id = 136
};

#endif
