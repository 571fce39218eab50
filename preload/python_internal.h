/*
 * python_internal.h - how the Python-side files of the tracer see each other.
 * Everything here runs with the GIL held unless said otherwise.
 */
#ifndef TRACE_PYTHON_INTERNAL_H
#define TRACE_PYTHON_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "python_api.h"

/* offsetof(PyObject, ob_type) in the GIL builds of 3.8 to 3.13, and an
 * object's type read through it (no reference taken). */
#define PY_OB_TYPE 8
static inline void *py_type_of(const void *o)
{
    return *(void *const *)((const char *)o + PY_OB_TYPE);
}

/* python_stack.c: plug the Python stack reader into the recorder.  0 when
 * this interpreter's frame layout is unknown. */
int python_stack_install(void);

/* python_code_deaths.c: every code object's death, numbered from 0.
 * install() wraps PyCode_Type's deallocator (0 if this interpreter's type
 * object is not laid out as we know it); watching() is 1 while the wrapper
 * is still the one called (another tool may replace it); count() is how
 * many died so far; get(i) gives death i's address, or 0 when it is not
 * known (more than CODE_DEATHS_KEPT later, or being written): then anything
 * cached about any code object may be stale.  All but install() need no
 * GIL. */
#define CODE_DEATHS_KEPT 1024u
int code_deaths_install(void);
int code_deaths_get(uint64_t i, uintptr_t *code);
/* The two asked at every event, inline. */
typedef void (*code_deaths_destructor)(void *);
void code_deaths_dealloc(void *code);           /* the wrapper */
/* &PyCode_Type.tp_dealloc once wrapped; else never NULL, a word holding
 * no deallocator. */
extern code_deaths_destructor *code_deaths_slot;
extern _Atomic uint64_t code_deaths_claimed;
static inline int code_deaths_watching(void)
{
    return __atomic_load_n(__atomic_load_n(&code_deaths_slot, __ATOMIC_RELAXED), __ATOMIC_RELAXED) ==
           code_deaths_dealloc;
}
static inline uint64_t code_deaths_count(void)
{
    return atomic_load_explicit(&code_deaths_claimed, memory_order_acquire);
}

/* The traced libpython was unloaded (python_after_dlclose): the code
 * type's slot is gone with it. */
void code_deaths_forget(void);

/* python_stack.c: this thread's state when it holds the GIL, else NULL. */
void *python_tstate_if_holding_gil(void);

/* python_threads.c: name threads in the log by their threading.Thread name;
 * look() (with the GIL, cheap when not due) notes this thread's name. */
void python_threads_install(void);
void python_threads_forget(void);      /* at a round's end */
void python_threads_look(void);

/* python_gc.c: append our callable to the main interpreter's gc.callbacks
 * (0 on failure); attach_current() does it for the current interpreter;
 * on_audit_event() attaches each subinterpreter at its first import and
 * forgets it when it is cleared; forget_all() at the end of a round
 * (Py_FinalizeEx). */
int python_gc_install(void);
int python_gc_attach_current(void);
void python_gc_on_audit_event(const char *event);
/* From the audit hook (GIL held), every audit event: now and then, whether
 * the program has taken our callable out of gc.callbacks (then INFO
 * not_watched says its collections are no longer recorded). */
void python_gc_look(void);
void python_gc_forget_all(void);
/* Is this free of an OBJ-domain block (python_alloc.c) the collection's,
 * asked while python_gc_collecting says a collection runs on this thread
 * (between our callback's "start" and "stop")?  Nonzero but for the
 * collection's own preamble: the arguments our callback was called with,
 * freed as it returns. */
int python_gc_frees_collected_slow(const void *block);
extern __thread int python_gc_collecting __attribute__((tls_model("initial-exec")));

/* The innermost collection running on this thread: a number no other
 * collection has; 0 when none. */
uint64_t python_gc_window(void);

/* python_alloc.c: wrap the allocator domains (after initialisation, and
 * after python_init_check_install: see python_init_check_reads_headers). */
void python_alloc_install(void);
/* The free of the object block at block, recorded as a collection's
 * (py_free) when one runs on this thread and the block's allocation was
 * recorded: its seq if it was written, else 0. */
uint64_t python_alloc_record_collected(const void *block);

/* python_free_lists.c: the deallocators of the types CPython keeps free
 * lists of, wrapped with every allocation recorded, so that an object a
 * collection kills is recorded when it dies, not when (if ever) its block
 * goes back to the allocator. */
void free_lists_install(int in_pools);
/* A free of an object block inside a collection: 1 when it is not to be
 * recorded (a free list emptied, or a death already recorded).  The
 * emptying of a free list is told by the block's type word, read only
 * where in_pools said objects come from pymalloc's pools: elsewhere (a
 * malloc's 8-byte block) the word may lie past the block, and a free list
 * emptied is recorded as before. */
int free_lists_left_out(const void *block);

/* At the start of a collection (GIL held), with young the interpreter's
 * count of GC objects allocated since its last young collection: with
 * object allocations recorded, tells once (INFO not_watched) when they no
 * longer reach our wrapper, the program having put another allocator in
 * its place (tracemalloc.stop() after -X tracemalloc restores the one from
 * before tracemalloc, without ours). */
void python_alloc_look(uint64_t young);

/* The traced libpython was unloaded: the raw wrappers stop reading its GOT
 * slots (python_alloc.c's raw_slot). */
void python_alloc_forget(void);

/* python_init_check.c: choose how to detect double initialisation
 * (TRACE_PY_REFTRACER), start it and say which in an INFO record;
 * record() writes one py_double_init event with both stacks.
 * reads_headers(): the check judges a block by the object header in it
 * (interposed or redirected PyObject_Init), so fresh blocks must not hold
 * a freed object's whole header (python_alloc.c clears them when malloc is
 * not ours). */
void python_init_check_install(void);
/* After each dlopen (python_on_dlopen). */
void python_init_check_on_dlopen(void);
/* The traced libpython was unloaded: no check, and the definitions ours
 * called are gone (python_after_dlclose). */
void python_init_check_forget(void);
int python_init_check_reads_headers(void);
void python_double_init_record(py_object *op, py_object *type);

/* python_reftracer.c: the reference-tracer check (3.13+).  prepare() and
 * start() return why it cannot run, or NULL; poll(), on every audit event,
 * notices when another tracer replaced ours. */
const char *python_reftracer_prepare(void);
const char *python_reftracer_start(void);
void python_reftracer_poll(void);

/* python_cupy.c: prepare() at attach time; then every audit event goes to
 * on_audit_event(), which installs CuPy's MemoryHook once cupy is imported. */
void python_cupy_prepare(void);
void python_cupy_forget(void);         /* at a round's end */
void python_cupy_on_audit_event(const char *event, py_object *args);
/* After each collection, on the thread that ran it: register the MemoryHook
 * there if CuPy is ready and it is not yet (a thread that raises no audit
 * event would otherwise make pool requests unseen). */
void python_cupy_on_collection(void);

/* python_mark.c: the audit events "gputrace.mark" (a mark whose text is read
 * in place) and "gputrace.flush" (write the log now), for gputrace.mark() and
 * the pytest plugin.  install() once attached. */
void python_mark_install(void);
void python_mark_on_audit_event(const char *event, py_object *args);

/* python_early_hook.c: the user data our audit hook is registered with, and
 * the audit events (any state) that let it free the hook's entry at exit. */
void *python_early_hook_user_data(void);
void python_early_hook_on_audit_event(const char *event, py_audit_hook hook);
/* An embedding program's next round: the rescue installed at the previous
 * round's exit is still the raw allocator; *a becomes what it forwards to. */
void python_early_hook_see_through(py_allocator *a);
/* Before each registration of the hook: its entry will come from the raw
 * allocator of that moment (libc's malloc, or a debug build's debug hooks
 * over it; in a later round of an embedding program, whatever is then in
 * place). */
void python_early_hook_registering(void);
/* python.c: called by the rescue's malloc (python_early_hook.c) after a
 * round's end, until the next round is watched or known not to be: a
 * libpython whose Py_Initialize does not reach ours (a static one, or
 * Debian's, whose calls among its own functions are direct) starts the next
 * round without our hook, and the log says so. */
void python_between_rounds_look(void);
/* python_early_hook.c: stop looking (the answer is known). */
void python_early_hook_round_known(void);

#endif
