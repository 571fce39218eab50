/*
 * python_init_check.c - py_double_init: an object initialised twice.
 *
 * The story (seed 001): tp_alloc (PyType_GenericAlloc) already initialised the
 * object, then the extension called PyObject_Init on it again; every
 * construction leaks one count from the interpreter's reference total.
 *
 * We export PyObject_Init and PyObject_InitVar from libtrace.so.  Extension
 * modules call them through a shared libpython's dynamic symbols, so the
 * preloaded definitions win and we forward to the real ones (RTLD_NEXT).
 * In a static interpreter (Debian's and Ubuntu's python3) the executable's
 * own definitions win the lookup and ours are never called that way: there
 * the extension modules' GOT slots for the two are pointed at ours
 * (got_redirect.c), at attach for the modules loaded by then and after each
 * dlopen for the others, and ours call the executable's.  Where neither
 * works, the reference tracer of 3.13.3+ takes over (python_reftracer.c);
 * 3.13.0 to 3.13.2 miss DESTROY events, so it is used on those only when
 * TRACE_PY_REFTRACER=on forces it.  Interposition is preferred where it
 * works: it costs nothing outside PyObject_Init, while the tracer runs on
 * every object creation and destruction (7% to 19% more CPU time on an
 * allocation-heavy loop, 3.13.0).  Exactly one of the two reports, and an
 * INFO record says which (or why neither).
 *
 * "Already initialised" means: the refcount is exactly 1 and ob_type is
 * already the type being set - the state tp_alloc leaves.  Memory fresh from
 * an allocator never looks like that: a freed block's first word holds the
 * allocator's free-list link (pymalloc, glibc) or is zero (calloc), never 1.
 */
#include "got_redirect.h"
#include "python_internal.h"
#include "recorder.h"
#include "warn.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORTED __attribute__((visibility("default")))
#define TP_NAME 24              /* offsetof(PyTypeObject, tp_name), all versions */

typedef py_object *(*init_fn)(py_object *op, py_object *type);
typedef py_object *(*init_var_fn)(py_object *op, py_object *type, ssize_t size);

static int checking;            /* set once attached and the interposition works */
/* The definitions ours call: the next after libtrace.so (a shared
 * libpython's), or in a static interpreter the program's. */
static init_fn real_init;
static init_var_fn real_init_var;
static _Atomic int redirecting; /* static interpreter: GOT slots point at ours */
/* 3.8's PyObject_InitVar calls PyObject_Init through the PLT: that inner call
 * is the same initialisation, not a second one. */
static __thread int in_real_init __attribute__((tls_model("initial-exec")));

static int already_initialised(const py_object *op, const py_object *type)
{
    const intptr_t *head = (const intptr_t *)op;
    return head[0] == 1 && head[1] == (intptr_t)type;
}

void python_double_init_record(py_object *op, py_object *type)
{
    tf_event e = { .kind = TF_EV_PY_DOUBLE_INIT };
    e.u.double_init.obj = (uint64_t)(uintptr_t)op;
    const char *name = *(const char **)((const char *)type + TP_NAME);
    rec_event_text(&e, REC_STACKS, &e.u.double_init.type_name, name ? name : "?");
}

/* The exported names are aliases of these local functions, so that
 * comparing with them tells our definition from one that won the lookup. */
/* A caller with a libpython of its own other than the traced one (a plugin
 * host's second libpython, python_api.h) gets that one's definition, and no
 * check: the object is not the traced interpreter's. */
static py_object *checked_init(py_object *op, py_object *type)
{
    if (py_unloaded()) {
        init_fn next;
        *(void **)&next = py_next_after_unload(PY_EXPORT_OBJECT_INIT, __builtin_return_address(0));
        return next ? next(op, type) : op;
    }
    init_fn real = __atomic_load_n(&real_init, __ATOMIC_ACQUIRE);
    if (!real) {
        *(void **)&real = py_next("PyObject_Init");
        py_note_traced(*(void **)&real);
        __atomic_store_n(&real_init, real, __ATOMIC_RELEASE);
    }
    init_fn own;
    *(void **)&own = py_own_for_caller(PY_EXPORT_OBJECT_INIT, __builtin_return_address(0));
    if (own && own != real)
        return own(op, type);
    if (checking && op && !in_real_init && already_initialised(op, type))
        python_double_init_record(op, type);
    return real ? real(op, type) : op;
}

static py_object *checked_init_var(py_object *op, py_object *type, ssize_t size)
{
    if (py_unloaded()) {
        init_var_fn next;
        *(void **)&next = py_next_after_unload(PY_EXPORT_OBJECT_INIT_VAR, __builtin_return_address(0));
        return next ? next(op, type, size) : op;
    }
    init_var_fn real = __atomic_load_n(&real_init_var, __ATOMIC_ACQUIRE);
    if (!real) {
        *(void **)&real = py_next("PyObject_InitVar");
        py_note_traced(*(void **)&real);
        __atomic_store_n(&real_init_var, real, __ATOMIC_RELEASE);
    }
    init_var_fn own;
    *(void **)&own = py_own_for_caller(PY_EXPORT_OBJECT_INIT_VAR, __builtin_return_address(0));
    if (own && own != real)
        return own(op, type, size);
    if (checking && op && !in_real_init && already_initialised(op, type))
        python_double_init_record(op, type);
    if (!real)
        return op;
    in_real_init = 1;
    py_object *result = real(op, type, size);
    in_real_init = 0;
    return result;
}

EXPORTED py_object *PyObject_Init(py_object *op, py_object *type)
    __attribute__((alias("checked_init")));
EXPORTED py_object *PyObject_InitVar(py_object *op, py_object *type, ssize_t size)
    __attribute__((alias("checked_init_var")));

enum setting { REFTRACER_AUTO, REFTRACER_ON, REFTRACER_OFF };

static enum setting read_setting(void)
{
    const char *s = getenv("TRACE_PY_REFTRACER");
    if (!s || !*s || !strcmp(s, "auto"))
        return REFTRACER_AUTO;
    if (!strcmp(s, "on"))
        return REFTRACER_ON;
    if (!strcmp(s, "off"))
        return REFTRACER_OFF;
    trace_warn_log("ignoring TRACE_PY_REFTRACER=%s (expected auto, on or off)", s);
    return REFTRACER_AUTO;
}

/* 3.13.3 added the DESTROY events of the evaluation loop's inlined decrefs. */
static int reftracer_complete(void)
{
    return py.minor > 13 || (py.minor == 13 && py.micro >= 3);
}

static void say(const char *state, const char *why)
{
    if (!why) {
        rec_info("py_double_init", state);
        return;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "%s (%s)", state, why);
    rec_info("py_double_init", msg);
}

/* Why the reference tracer is not used, or NULL when it should be. */
static const char *tracer_refusal(enum setting setting, int interposable)
{
    if (setting == REFTRACER_OFF)
        return "TRACE_PY_REFTRACER=off";
    const char *why = python_reftracer_prepare();
    if (why || setting == REFTRACER_ON)
        return why;
    if (interposable)
        return "interposition is cheaper";
    if (!reftracer_complete())
        return "the reference tracer misses DESTROY events before 3.13.3; "
               "TRACE_PY_REFTRACER=on forces it";
    return NULL;
}

/* Point the loaded extension modules' slots for the two at ours. */
static unsigned redirect(void)
{
    got_target targets[] = {
        { .name = "PyObject_Init", .from = (void *)real_init, .to = (void *)checked_init },
        { .name = "PyObject_InitVar", .from = (void *)real_init_var, .to = (void *)checked_init_var },
    };
    return got_redirect(targets, 2);
}

int python_init_check_reads_headers(void)
{
    return checking;
}

void python_init_check_forget(void)
{
    checking = 0;
    __atomic_store_n(&real_init, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&real_init_var, NULL, __ATOMIC_RELEASE);
}

void python_init_check_on_dlopen(void)
{
    if (atomic_load_explicit(&redirecting, memory_order_acquire))
        redirect();
}

/* Where the lookup that binds every object's calls of `name` ends: our
 * definition, another one, or NULL.  dlsym answers with the program's
 * canonical PLT entry when a program linked without PIE takes the
 * function's address (its symbol is undefined there, with a value); calls
 * through that entry are bound like any object's, to the first definition,
 * which is ours when libtrace.so is preloaded in front of libpython.  So an
 * answer that is no definition is read as ours if one comes after us. */
static void *lookup_winner(const char *name, void *ours)
{
    void *found = py_global_sym(name);
    if (!found || found == ours)
        return found;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(found, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && info.dli_saddr == found &&
        sym->st_shndx != SHN_UNDEF)
        return found;
    return py_next(name) ? ours : NULL;
}

/* A static interpreter's own PyObject_Init and PyObject_InitVar, for ours to
 * call once the modules' slots point at ours; 0 if it lacks one.  Only a
 * definition will do: a canonical PLT entry taken for one would lead back to
 * ours, which would call it again, for ever. */
static int take_program_definitions(void)
{
    init_fn init;
    init_var_fn init_var;
    *(void **)&init = lookup_winner("PyObject_Init", (void *)checked_init);
    *(void **)&init_var = lookup_winner("PyObject_InitVar", (void *)checked_init_var);
    if (!got_redirect_supported() || !init || !init_var || (void *)init == (void *)checked_init ||
        (void *)init_var == (void *)checked_init_var)
        return 0;
    __atomic_store_n(&real_init, init, __ATOMIC_RELEASE);
    __atomic_store_n(&real_init_var, init_var, __ATOMIC_RELEASE);
    return 1;
}

void python_init_check_install(void)
{
    const char *wanted = getenv("TRACE_PY_DOUBLE_INIT");
    if (wanted && !strcmp(wanted, "0")) {
        say("off", "TRACE_PY_DOUBLE_INIT=0");
        return;
    }
    if (wanted && *wanted && strcmp(wanted, "1"))
        trace_warn_log("ignoring TRACE_PY_DOUBLE_INIT=%s (expected 0 or 1)", wanted);
    enum setting setting = read_setting();
    int interposable = lookup_winner("PyObject_Init", (void *)checked_init) == (void *)checked_init;
    int redirectable = !interposable && take_program_definitions();
    const char *why = tracer_refusal(setting, interposable || redirectable);
    if (!why && !(why = python_reftracer_start())) {
        say("on: reference tracer", reftracer_complete() ? NULL :
            "forced before 3.13.3: an address freed without a DESTROY event and "
            "reused is reported too");
        return;
    }
    if (interposable) {
        checking = 1;
        say("on: extension modules' PyObject_Init/PyObject_InitVar are interposed",
            setting == REFTRACER_ON ? why : NULL);
    } else if (redirectable) {
        checking = 1;
        atomic_store_explicit(&redirecting, 1, memory_order_release);
        redirect();
        say("on: extension modules' PyObject_Init/PyObject_InitVar are redirected (static "
            "interpreter: their GOT slots point at ours)", setting == REFTRACER_ON ? why : NULL);
    } else {
        say("off: the interpreter's own PyObject_Init wins the symbol lookup (static "
            "interpreter), so extension modules' calls cannot be interposed", why);
    }
}
