/*
 * python_layout.c - per-version structure offsets (see python_layout.h).
 * Values for 3.8 to 3.12 come from each version's headers on x86-64/aarch64
 * (LP64); 3.13's are read from the interpreter itself.
 */
#include "python_layout.h"
#include "python_api.h"
#include "python_layout_tables.h"
#include "python_lines.h"

#include <dlfcn.h>
#include <string.h>

/* The head of 3.13's _Py_DebugOffsets, which starts _PyRuntime.  Its layout is
 * fixed within a minor version; we read the groups up to the code object. */
typedef struct debug_offsets_3_13 {
    char cookie[8];
    uint64_t version;
    uint64_t free_threaded;
    uint64_t runtime_state[3];
    struct { uint64_t size, id, next, threads_head, gc, rest[8]; } interpreter_state;
    struct { uint64_t size, prev, next, interp, current_frame, thread_id,
             native_thread_id, datastack_chunk, status; } thread_state;
    struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } frame;
    struct { uint64_t size, filename, name, qualname, linetable, firstlineno,
             argcount, localsplusnames, localspluskinds, co_code_adaptive; } code;
} debug_offsets_3_13;

static py_layout layout_3_13;

static const py_layout *read_debug_offsets(void)
{
    const debug_offsets_3_13 *d = py_sym("_PyRuntime");
    if (!d || memcmp(d->cookie, "xdebugpy", 8) != 0 || d->free_threaded)
        return NULL;
    if ((d->version >> 16) != 0x030D)
        return NULL;
    layout_3_13 = (py_layout){
        .tstate_frame = d->thread_state.current_frame,
        .tstate_cframe = PY_NO_FIELD, .cframe_frame = PY_NO_FIELD,
        .frame_code = d->frame.executable, .frame_back = d->frame.previous,
        .frame_instr = d->frame.instr_ptr, .frame_owner = d->frame.owner,
        .owner_cstack = 3, .skip_unbegun_callers = 1,
        .code_filename = d->code.filename, .code_name = d->code.qualname,
        .code_firstlineno = d->code.firstlineno, .code_bytecode = d->code.co_code_adaptive,
        .code_linetable = d->code.linetable, .line_format = PY_LINES_LOCATIONS,
        STR_WITHOUT_WSTR,
        /* generations[0].count sits 44 bytes into 3.13's gc state */
        .tstate_interp = d->thread_state.interp,
        .gc_young_count = d->interpreter_state.gc + 44,
        .tstate_thread_id = d->thread_state.thread_id,
    };
    return &layout_3_13;
}

const py_layout *py_layout_get(void)
{
    switch (py.minor) {
    case 8: return &layout_3_8;
    case 9: return &layout_3_9;
    case 10: return &layout_3_10;
    case 11: return &layout_3_11;
    case 12: return &layout_3_12;
    case 13: return read_debug_offsets();
    default: return NULL;
    }
}
