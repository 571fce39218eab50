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
 */
#include "python.h"
#include "python_api.h"
#include "python_internal.h"
#include "config.h"
#include "recorder.h"
#include "warn.h"

#include <stdio.h>

static enum { PY_WAITING, PY_ATTACHING, PY_ATTACHED, PY_GAVE_UP } attach_state;

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
    python_alloc_install();
    python_init_check_install();
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

/* Audit hooks run with the GIL held, so attach_state needs no atomics: the
 * hook cannot run on two threads at once.  Attaching imports modules, which
 * raises more audit events: the PY_ATTACHING state turns those away. */
static int on_audit_event(const char *event, py_object *args, void *user)
{
    (void)user;
    python_early_hook_on_audit_event(event, on_audit_event);
    if (attach_state == PY_ATTACHED) {
        python_cupy_on_audit_event(event, args);
        python_mark_on_audit_event(event, args);
        python_reftracer_poll();
        python_threads_look();
        return 0;
    }
    if (attach_state != PY_WAITING || !py.Py_IsInitialized())
        return 0;
    attach_state = PY_ATTACHING;
    attach();
    return 0;
}

void python_start(void)
{
    if (!py_api_probe())
        return;                 /* not a Python process: CUDA only */
    if (!trace_config_get()->python)
        return;
    if (py.PySys_AddAuditHook(on_audit_event, python_early_hook_user_data()) != 0)
        say_once("Python hooks off: PySys_AddAuditHook refused the hook");
}
