/*
 * python.c - getting into CPython: detection, the audit-hook bootstrap and the
 * one-time attachment of the Python-side hooks.
 *
 * The constructor runs before the interpreter exists, so we register an audit
 * hook (documented as safe before Py_Initialize) and do the real work on the
 * first audit event raised once Py_IsInitialized() is 1: that is during the
 * import of site, before sitecustomize and before the script runs.  The hook's
 * list entry outlives a change of raw allocator (PYTHONMALLOC=debug, -X dev):
 * python_early_hook.c frees it correctly at exit.
 *
 * Rounds.  A program that embeds Python may call Py_Initialize and
 * Py_FinalizeEx several times.  Py_FinalizeEx frees every audit hook (it
 * raises "cpython._PySys_ClearAuditHooks" first), and the next round is a new
 * main interpreter with its own gc.callbacks.  So on that event we forget the
 * round, and we interpose the embedding entry points (Py_Initialize,
 * Py_InitializeEx, Py_InitializeFromConfig): before the real one runs we
 * register the audit hook again (the runtime keeps hooks added before
 * initialisation), and once it returns we attach if no audit event did.
 * Embedders call these through a shared libpython, so the preload's
 * definitions win; an interpreter's own startup (Py_BytesMain) does not go
 * through them, and needs no second round.
 */
#include "python.h"
#include "python_api.h"
#include "python_internal.h"
#include "python_greenlet.h"
#include "config.h"
#include "fork_gate.h"
#include "hook_stack.h"
#include "host_blocks.h"
#include "recorder.h"
#include "warn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static enum { PY_WAITING, PY_ATTACHING, PY_ATTACHED, PY_GAVE_UP } attach_state;
static int hook_registered;     /* our audit hook is in the runtime's list */

/* In the log; on stderr only where the line at exit would be: a program
 * that compares its children's stderr must not find ours in it. */
static void say_once(const char *what)
{
    rec_info("python", what);
    trace_warn("%s", what);
}

/* Attachment imports gc and calls into the interpreter; whatever exception
 * was pending when the audit event was raised must survive it untouched. */
static void install_hooks(void)
{
    py_object *type, *value, *traceback;
    py.PyErr_Fetch(&type, &value, &traceback);
    if (!python_stack_install())
        say_once("Python stacks off: unknown interpreter layout");
    if (!python_gc_install()) {
        py.PyErr_Clear();
        say_once("GC events off: could not append to gc.callbacks");
    }
    python_init_check_install();
    python_alloc_install();
    python_cupy_prepare();
    python_mark_install();
    python_threads_install();
    py.PyErr_Restore(type, value, traceback);
}

static void attach(void)
{
    const char *why = NULL;
    if (!py_api_resolve(&why)) {
        attach_state = PY_GAVE_UP;
        char msg[160];
        snprintf(msg, sizeof msg, "Python hooks off: %s", why);
        say_once(msg);
        return;
    }
    char version[32];
    snprintf(version, sizeof version, "3.%d.%d", py.minor, py.micro);
    rec_info("python_version", version);
    install_hooks();
    attach_state = PY_ATTACHED;
}

/* What an audit event does once the hooks are in: the handlers that want
 * it (told apart by their first letter before any strcmp: some events come
 * per call of a hot function, sys._getframe, which logging calls for every
 * record; open; pickle's find_class), then the periodic looks.  Those call
 * into CPython: the thread's name took 760 bytes a look (3.11), 7.5 to 9.3
 * KiB while threading's import was under way (PyImport_GetModule runs
 * importlib's _lock_unlock_module, Python code), attaching 2.5 to 9.4 KiB,
 * a mark 1.2 KiB of frame. */
static void attached_work(const char *event, py_object *args)
{
    char first = event[0];
    if (first == 'i' || first == 'c')   /* "import", "cpython.PyInterpreterState_Clear" */
        python_gc_on_audit_event(event);
    python_cupy_on_audit_event(event, args);
    if (first == 'g')                   /* "gputrace.*" */
        python_mark_on_audit_event(event, args);
    python_reftracer_poll();
    python_threads_look();
    python_gc_look();
}

struct audit_args {
    const char *event;
    py_object *args;
};

static void attached_packed(void *arg)
{
    const struct audit_args *a = arg;
    attached_work(a->event, a->args);
}

static void attach_packed(void *arg)
{
    (void)arg;
    attach();
}

/* Audit hooks run with the GIL held, so attach_state needs no atomics: the
 * hook cannot run on two threads at once.  Attaching imports modules, which
 * raises more audit events: the PY_ATTACHING state turns those away.  The
 * work goes through the recorder's room check (hook_stack.h): on a thread
 * with less than HOOK_STACK_ROOM left it runs on a stack of ours, so a thin
 * stack pays the same at an audit event as at a recorded one. */
static int on_audit_event(const char *event, py_object *args, void *user)
{
    (void)user;
    if (event[0] == 'c' && !strcmp(event, "cpython._PySys_ClearAuditHooks")) {
        python_early_hook_on_audit_event(event, on_audit_event);
        /* The end of a round: the hook list is freed right after this. */
        hook_registered = 0;
        if (attach_state != PY_GAVE_UP)
            attach_state = PY_WAITING;
        python_gc_forget_all();
        if (attach_state != PY_GAVE_UP) {
            python_threads_forget();
            python_cupy_forget();
        }
        return 0;
    }
    if (attach_state == PY_ATTACHED) {
        if (__builtin_expect(hook_stack_roomy(), 1))
            attached_work(event, args);
        else
            hook_stack_run(attached_packed, &(struct audit_args){ .event = event, .args = args });
        return 0;
    }
    if (attach_state != PY_WAITING || !py.Py_IsInitialized())
        return 0;
    attach_state = PY_ATTACHING;
    if (hook_stack_roomy())
        attach();
    else
        hook_stack_run(attach_packed, NULL);
    return 0;
}

static void register_hook(void)
{
    python_early_hook_registering();
    if (py.PySys_AddAuditHook(on_audit_event, python_early_hook_user_data()) != 0)
        say_once("Python hooks off: PySys_AddAuditHook refused the hook");
    else
        hook_registered = 1;
}

/* CPython before 3.8 has no audit hooks, our only way in.  Such a process
 * is told of (and so leaves a log saying why it has no Python events)
 * instead of passing for a process without Python; PyPy exports no
 * Py_GetVersion and stays a plain process. */
static void say_if_old_python(void)
{
    const char *(*get_version)(void);
    *(void **)&get_version = py_sym("Py_GetVersion");
    if (!get_version)
        return;                 /* not a Python process: CUDA only */
    const char *v = get_version();
    char msg[160];
    snprintf(msg, sizeof msg, "Python hooks off: unsupported Python version %.*s (3.8 to 3.13 are supported)",
             (int)strcspn(v, " "), v);
    say_once(msg);
}

void python_start(void)
{
    if (!py_api_probe()) {
        if (trace_config_get()->python)
            say_if_old_python();
        return;
    }
    if (!trace_config_get()->python)
        return;
    register_hook();
}

/* ------------------------------------------------ embedding: later rounds */

/* PyStatus, the same from 3.8 to 3.13. */
typedef struct py_status { int type; const char *func; const char *err_msg; int exitcode; } py_status;

/* Not while nothing records: a secure-execution process, or a second copy
 * of libtrace.so behind the first (start.c), whose hooks must only forward. */
static int python_wanted(void)
{
    return rec_active() && trace_config_get()->python && !py_unloaded() &&
           (py.PySys_AddAuditHook || py_api_probe());
}

static void before_round(void)
{
    if (python_wanted() && !hook_registered && attach_state != PY_GAVE_UP) {
        register_hook();
    }
}

/* A library just loaded may be an embedder's libpython: the hook goes in
 * now, before its Py_Initialize, as python_start does for a python
 * executable.  Our Py_Initialize* would put it in at the call too, but only
 * where libpython's own calls of them go through the dynamic linker:
 * Debian's libpython calls Py_InitializeEx directly, and a program that
 * opened it was not traced at all.  Two threads' dlopens do not both put
 * one in. */
void python_on_dlopen(void)
{
    static atomic_int busy;
    if (!hook_registered && !atomic_exchange(&busy, 1)) {
        before_round();
        atomic_store(&busy, 0);
    }
    python_init_check_on_dlopen();
    python_greenlet_on_dlopen();
}

/* After a round's end, at the rescue's raw mallocs (python_early_hook.c):
 * the hook back in (our Py_Initialize* or a dlopen put it there), or the
 * interpreter initialised again without it.  The audit hook is our only way
 * in, so such a round cannot be traced; it is not passed over in silence. */
void python_between_rounds_look(void)
{
    if (hook_registered) {
        python_early_hook_round_known();
        return;
    }
    if (!py.Py_IsInitialized || !py.Py_IsInitialized())
        return;
    python_early_hook_round_known();
    rec_info("not_watched", "Python initialised again after Py_FinalizeEx without going through the "
                            "dynamic linker (a static libpython, or one whose own calls are direct): "
                            "this round and any later ones are not traced");
}

/* After each dlclose that succeeded: if it unloaded the traced libpython
 * (an embedder done with it, finalised or not), nothing of ours may touch
 * it again.  Before, the library was never unloaded under us: glibc's
 * RTLD_DEFAULT lookups made it undeletable and an RTLD_LOCAL one was held
 * open (python_api.c), so the program noticed us (a second version opened
 * RTLD_GLOBAL bound to the first one's functions and crashed; the same one
 * opened again kept its old state).  What the recorder calls on any thread
 * (the stack reader, the thread namer, the check of open collections) is
 * taken out; the hooks the library held went with it.  A libpython loaded
 * later is not traced: the tracer's Python state (layouts, wrapped types,
 * caches by address) is the first one's.  Our exports forward to what
 * their callers reach without us (python_api.h). */
static struct {
    int held;
    const rec_py_provider *provider;
    rec_thread_namer namer;
    rec_open_check open_check;
} suspended;
static pthread_mutex_t suspend_lock = PTHREAD_MUTEX_INITIALIZER;

/* Before the program's dlclose of the traced library's own handle: what
 * the recorder calls on any thread is taken out first, so that no event
 * on another thread starts reading the interpreter while it is being
 * unmapped (one already inside the stack reader still may).  Put back by
 * python_after_dlclose if the library stays.  1 if taken out. */
int python_before_dlclose(void *handle)
{
    if (!py_handle_is_traced(handle))
        return 0;
    fork_gate_enter();   /* a child must not inherit suspend_lock held */
    pthread_mutex_lock(&suspend_lock);
    if (!suspended.held++) {
        suspended.provider = rec_set_py_provider(NULL);
        suspended.namer = rec_set_thread_namer(NULL);
        suspended.open_check = rec_set_open_check(NULL);
    }
    pthread_mutex_unlock(&suspend_lock);
    fork_gate_leave();
    return 1;
}

static void resume(void)
{
    fork_gate_enter();
    pthread_mutex_lock(&suspend_lock);
    if (suspended.held && !--suspended.held && !py_unloaded()) {
        /* Unless one was set meanwhile (an attach on another thread). */
        const rec_py_provider *p = rec_set_py_provider(suspended.provider);
        if (p)
            rec_set_py_provider(p);
        rec_thread_namer n = rec_set_thread_namer(suspended.namer);
        if (n)
            rec_set_thread_namer(n);
        rec_open_check c = rec_set_open_check(suspended.open_check);
        if (c)
            rec_set_open_check(c);
    }
    pthread_mutex_unlock(&suspend_lock);
    fork_gate_leave();
}

void python_after_dlclose(int suspended_here, int rc)
{
    static atomic_int forgotten;
    int unloaded = rc == 0 && !py_unloaded() && py_traced_unloaded();
    if (suspended_here)
        resume();
    if (!unloaded || atomic_exchange(&forgotten, 1))
        return;
    rec_set_py_provider(NULL);
    rec_set_thread_namer(NULL);
    rec_set_open_check(NULL);
    python_init_check_forget();
    python_alloc_forget();
    code_deaths_forget();
    host_mmap_forget_arenas();
    hook_registered = 0;
    attach_state = PY_GAVE_UP;
    if (!trace_config_get()->python)
        return;
    const char *path = py_traced_path();
    char msg[700];
    snprintf(msg, sizeof msg, "Python of %s: unloaded by the program (dlclose); from here on no Python "
             "is traced, nor any libpython loaded after it", path ? path : "?");
    rec_info("not_watched", msg);
}

/* The caller holds the GIL once initialisation returned. */
static void after_round(void)
{
    if (hook_registered && attach_state == PY_WAITING && py.Py_IsInitialized()) {
        attach_state = PY_ATTACHING;
        attach();
    }
}

#define EXPORTED __attribute__((visibility("default")))
typedef void (*init_ex_fn)(int);
typedef void (*init_fn)(void);
typedef py_status (*init_config_fn)(const void *);

/* The definition a call of ours goes to: the traced interpreter's (py_next,
 * found once: good while that library is loaded, and once it is not,
 * python_after_dlclose has made py_unloaded() true), unless the caller's
 * object has its own (python_api.h).  A plugin host that opens two
 * libpythons RTLD_LOCAL has each one's Py_Initialize tail-jump to its own
 * Py_InitializeEx through its PLT, which reached ours: forwarding every call
 * to the first library found ran that one's initialisation for the second
 * (whose own never ran: the program aborted in its PyEval_SaveThread, "the
 * GIL is released"), or, once the first was finalised and closed,
 * reinitialised the first and crashed.  A tail call leaves no return
 * address in the library, so its own calls are pointed at its own
 * definitions at each dlopen (py_other_libpythons_own_calls); this catches
 * the calls from its scope that still come here.  Only the traced
 * interpreter's rounds are ours to follow; another's just runs. */
static void *forward_to(enum py_export e, const char *name, void *_Atomic *traced, const void *ret,
                        int *other)
{
    if (py_unloaded()) {
        /* The traced library was unloaded (what traced holds with it):
         * every interpreter from now on just runs. */
        *other = 1;
        return py_next_after_unload(e, ret);
    }
    void *real = atomic_load_explicit(traced, memory_order_acquire);
    if (!real) {
        real = py_next(name);
        py_note_traced(real);
        atomic_store_explicit(traced, real, memory_order_release);
    }
    void *own = py_own_for_caller(e, ret);
    *other = own && own != real;
    if (*other)
        py_note_other_libpython(own);
    return own ? own : real;
}
#define REAL(type, e, name)                                                                   \
    static void *_Atomic traced_;                                                              \
    int other_;                                                                                \
    type real_;                                                                                \
    *(void **)&real_ = forward_to(e, name, &traced_, __builtin_return_address(0), &other_)

EXPORTED void Py_InitializeEx(int install_signals)
{
    REAL(init_ex_fn, PY_EXPORT_INITIALIZE_EX, "Py_InitializeEx");
    if (other_) {
        if (real_)
            real_(install_signals);
        return;
    }
    before_round();
    if (real_)
        real_(install_signals);
    after_round();
}

EXPORTED void Py_Initialize(void)
{
    REAL(init_fn, PY_EXPORT_INITIALIZE, "Py_Initialize");
    if (other_) {
        if (real_)
            real_();
        return;
    }
    before_round();
    if (real_)
        real_();
    after_round();
}

EXPORTED py_status Py_InitializeFromConfig(const void *config)
{
    REAL(init_config_fn, PY_EXPORT_INITIALIZE_FROM_CONFIG, "Py_InitializeFromConfig");
    if (other_)
        return real_ ? real_(config) : (py_status){ 0 };
    before_round();
    py_status status = { 0 };
    if (real_)
        status = real_(config);
    if (status.type == 0)
        after_round();
    return status;
}
