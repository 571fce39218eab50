/*
 * python.c - getting into CPython: detection, the audit-hook bootstrap and the
 * one-time attachment of the Python-side hooks.
 *
 * The constructor runs before the interpreter exists, so we register an audit
 * hook (documented as safe before Py_Initialize) and do the real work on the
 * first audit event raised once Py_IsInitialized() is 1: that is during the
 * import of site, before sitecustomize and before the script runs.
 */
#include "python.h"
#include "python_api.h"
#include "python_internal.h"
#include "config.h"
#include "recorder.h"
#include "warn.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

static enum { PY_WAITING, PY_ATTACHING, PY_ATTACHED, PY_GAVE_UP } attach_state;

static void say_once(const char *what)
{
    rec_info("python", what);
    trace_warn("%s", what);
}

/* Does argv ask for -X dev?  Only interpreter options count: we stop at the
 * script, -c or -m, whose arguments belong to the program. */
static int cmdline_asks_dev_mode(void)
{
    char buf[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *arg = buf + strlen(buf) + 1;   /* skip argv[0] */
    int takes_value = 0;
    for (; arg < buf + n; arg += strlen(arg) + 1) {
        if (takes_value) {
            if (takes_value == 'X' && strcmp(arg, "dev") == 0)
                return 1;
            takes_value = 0;
            continue;
        }
        if (arg[0] != '-' || strcmp(arg, "-c") == 0 || strcmp(arg, "-m") == 0 ||
            strcmp(arg, "--") == 0 || strcmp(arg, "-") == 0)
            return 0;
        if (strcmp(arg, "-Xdev") == 0)
            return 1;
        if (strcmp(arg, "-X") == 0 || strcmp(arg, "-W") == 0)
            takes_value = arg[1];
    }
    return 0;
}

/* The hazard: PySys_AddAuditHook allocates its list entry with the raw
 * allocator as it is before pre-initialisation (plain malloc); with the debug
 * allocator selected, finalisation frees that entry through the debug
 * allocator, which finds no debug header and aborts the process.  A debug
 * build (Py_REF_DEBUG) selects the debug allocator by default. */
static const char *debug_allocator_reason(void)
{
    const char *m = getenv("PYTHONMALLOC");
    if (m && strstr(m, "debug"))
        return "PYTHONMALLOC selects the debug allocator";
    const char *dev = getenv("PYTHONDEVMODE");
    if (dev && *dev)
        return "PYTHONDEVMODE selects the debug allocator";
    if (cmdline_asks_dev_mode())
        return "-X dev selects the debug allocator";
    if (dlsym(RTLD_DEFAULT, "_Py_RefTotal") || dlsym(RTLD_DEFAULT, "_Py_GetGlobalRefTotal"))
        return "a debug build of CPython uses the debug allocator";
    return NULL;
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
    if (attach_state == PY_ATTACHED) {
        python_cupy_on_audit_event(event, args);
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
    const char *reason = debug_allocator_reason();
    if (reason) {
        char msg[200];
        snprintf(msg, sizeof msg, "Python hooks off: %s, which would abort at exit "
                 "on our early audit hook; GPU tracing continues", reason);
        say_once(msg);
        return;
    }
    if (py.PySys_AddAuditHook(on_audit_event, NULL) != 0)
        say_once("Python hooks off: PySys_AddAuditHook refused the hook");
}
