/*
 * python_threads.c - threads named by their threading.Thread name, so a
 * report tells loader_0 from MainThread (CPython before 3.14 does not pass
 * the name to the OS).
 *
 * No hook sees a rename (thread.name = "x" is a plain attribute store), so
 * the name is looked up, at most every NAME_EVERY_NS per thread, when the
 * thread holds the GIL: at an event it records, and at an audit event it
 * raises (imports, open(), compile, ...).  A thread whose events all come
 * with the GIL released (CUDA calls through ctypes or an extension, and
 * nothing else) stays unnamed.  threading._active maps the thread's
 * ident (pthread_self) to its Thread.  The look-up runs no Python code,
 * creates no object and raises nothing
 * (borrowed references, the exception state set aside and put back):
 * sys.modules from the sys dict, PyModule_GetDict, PyDict_GetItem,
 * PyDict_Next and PyObject_GetAttr on names interned at attach time.  The
 * name found is kept per thread, for the events it records without the GIL.
 */
#include "python_internal.h"
#include "event_clock.h"
#include "recorder.h"
#include "thread_mem.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define NAME_EVERY_NS 100000000ull
#define TLS static __thread __attribute__((tls_model("initial-exec")))

static py_object *key_threading, *key_active, *key_name;
TLS uint64_t next_look_ns;

static uint64_t coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* threading, if imported (a new reference), or NULL, read from sys.modules
 * as it is, without importlib: PyImport_GetModule (3.9 and later) waits
 * for a module still being imported by calling importlib's
 * _lock_unlock_module, Python code run inside our hook, which also undid
 * the import lock's bookkeeping of the thread it interrupted (a traced
 * `import threading` raised KeyError from _ModuleLock.acquire's
 * `del _blocking_on[tid]`) and took 7.5 to 9.3 KiB of stack.  A module
 * being imported is read as far as it is (its _active may not be there
 * yet: then no name).
 *
 * sys.modules itself comes from the interpreter's sys dict, which outlives
 * it (emptied, then None, then gone: nothing found); not through
 * PyImport_GetModuleDict, a fatal error ("no module dictionary", abort)
 * once the interpreter's modules are gone: the end of a subinterpreter
 * (Py_EndInterpreter) raises "cpython.PyInterpreterState_Clear" after
 * that, and our audit hook, the runtime's, sees it.
 *
 * No object is created here: a look runs inside the recorder's events,
 * and an object's creation is where tracemalloc takes its lock
 * (_PyTraceMalloc_NewReference, 3.8 to 3.10), which an event inside
 * tracemalloc may already hold: its table of traces grows with a raw
 * malloc of 1 MiB and more, a host block.  3.10's PySys_GetObject, which
 * made a str per look, hung a traced program that started tracemalloc
 * (test_thread_look.py).  3.8 to 3.10 read it through an identifier whose
 * str is made at install, 3.11 and later through a str interned at
 * install (_PySys_GetAttr).  3.10 keeps an identifier's str per
 * interpreter and makes it at the first use in each: there the look is
 * made only in the interpreter it was made for at install (threads of
 * 3.10's subinterpreters stay unnamed). */
static struct py_identifier_39 {
    struct py_identifier_39 *next;   /* _Py_Identifier, 3.8 and 3.9 */
    const char *string;
    py_object *object;
} id_modules_39 = { NULL, "modules", NULL };
static struct py_identifier_310 {
    const char *string;              /* _Py_Identifier, 3.10 */
    ssize_t index;                   /* process-wide, -1 until first used */
} id_modules_310 = { "modules", -1 };
static void *id_modules_interp;      /* 3.10: where its str was made, NULL: none */
static py_object *key_modules;

static py_object *threading_module(void *tstate)
{
    py_object *modules = NULL;
    if (py._PySys_GetObjectId && py.minor <= 9) {
        if (!id_modules_39.object)
            return NULL;          /* not made at install (or cleared by a finalisation) */
        modules = py._PySys_GetObjectId(&id_modules_39);
    } else if (py._PySys_GetObjectId) {
        if (!id_modules_interp || py.PyInterpreterState_Get() != id_modules_interp)
            return NULL;
        modules = py._PySys_GetObjectId(&id_modules_310);
    } else if (py._PySys_GetAttr && key_modules) {
        modules = py._PySys_GetAttr(tstate, key_modules);
    }
    py_object *module = modules ? py.PyDict_GetItem(modules, key_threading) : NULL;
    if (module)
        py.Py_IncRef(module);
    return module;
}

/* The Thread object of this thread (borrowed), or NULL. */
static py_object *current_thread(void *tstate)
{
    py_object *module = threading_module(tstate);   /* NULL: not imported */
    if (!module)
        return NULL;
    py_object *dict = py.PyModule_GetDict(module);
    py_object *active = dict ? py.PyDict_GetItem(dict, key_active) : NULL;
    py_object *found = NULL, *key, *value;
    ssize_t pos = 0;
    unsigned long long me = (unsigned long long)pthread_self();
    while (active && !found && py.PyDict_Next(active, &pos, &key, &value))
        if (py.PyLong_AsUnsignedLongLongMask(key) == me)
            found = value;
    py.Py_DecRef(module);   /* sys.modules keeps it */
    return found;
}

/* The name found is in the thread's mapping (thread_mem.h: py_found),
 * where, when that cannot be had, no name is kept: the thread stays
 * unnamed. */
TLS uint32_t known_version;            /* bumped when it changes; 0: none yet */

static void look(uint64_t now)
{
    void *tstate;
    if (now < next_look_ns || !key_name || !(tstate = python_tstate_if_holding_gil()))
        return;
    next_look_ns = now + NAME_EVERY_NS;
    py_object *type, *value, *traceback;
    py.PyErr_Fetch(&type, &value, &traceback);
    py_object *thread = current_thread(tstate);
    py_object *name = thread ? py.PyObject_GetAttr(thread, key_name) : NULL;
    ssize_t len = 0;
    const char *text = name ? py.PyUnicode_AsUTF8AndSize(name, &len) : NULL;
    thread_mem *m = text && len > 0 ? thread_mem_get() : NULL;
    if (m) {
        char *known = m->py_found;
        size_t n = (size_t)len < sizeof m->py_found - 1 ? (size_t)len : sizeof m->py_found - 1;
        if (!known_version || memcmp(known, text, n) != 0 || known[n] != '\0') {
            memcpy(known, text, n);
            known[n] = '\0';
            if (++known_version == 0)
                known_version = 1;
        }
    }
    if (name)
        py.Py_DecRef(name);   /* the Thread keeps it */
    py.PyErr_Clear();
    py.PyErr_Restore(type, value, traceback);
}

void python_threads_look(void)
{
    look(coarse_now());
}

/* Called for every event the recorder records: "now" is the latest event's
 * time, not the clock's (asking the kernel, even its coarse clock through
 * the vDSO, was a third of what naming cost per event when every Python
 * allocation is recorded).  It lags only after a stretch without events:
 * then this event looks at the name as of that stretch's start and the
 * next one looks again.  A thread's first event always looks. */
static uint32_t thread_name(uint32_t seen, char *buf, size_t cap, uint64_t *ask_after)
{
    look(event_clock_latest_ns());
    *ask_after = next_look_ns;   /* a name an audit event's look finds waits till then */
    thread_mem *m = thread_mem_peek();   /* known_version set: mapped */
    if (known_version != seen && known_version && m) {
        strncpy(buf, m->py_found, cap - 1);
        buf[cap - 1] = '\0';
    }
    return known_version;
}

/* A round's end: the three names let go while the interpreter can take
 * them (python_cupy_forget says why); a look finds no key_name and waits
 * for the next round's install. */
void python_threads_forget(void)
{
    py_object **held[] = { &key_threading, &key_active, &key_name, &key_modules };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        if (*held[i])
            py.Py_DecRef(*held[i]);
        *held[i] = NULL;
    }
    id_modules_interp = NULL;   /* 3.10: the interpreter's strs go with it */
}

void python_threads_install(void)
{
    key_threading = py.PyUnicode_InternFromString("threading");
    key_active = py.PyUnicode_InternFromString("_active");
    key_name = py.PyUnicode_InternFromString("_name");
    if (py._PySys_GetObjectId && py.minor <= 9) {
        py._PySys_GetObjectId(&id_modules_39);   /* makes id_modules_39.object, kept till finalisation */
    } else if (py._PySys_GetObjectId && py.PyInterpreterState_Get) {
        /* makes this interpreter's str, kept till its finalisation */
        if (py._PySys_GetObjectId(&id_modules_310) && id_modules_310.index >= 0)
            id_modules_interp = py.PyInterpreterState_Get();
    }
    if (py._PySys_GetAttr && !key_modules)
        key_modules = py.PyUnicode_InternFromString("modules");
    if (key_threading && key_active && key_name &&
        (id_modules_39.object || id_modules_interp || key_modules)) {
        rec_set_thread_namer(thread_name);
    } else {
        if (key_name)
            py.Py_DecRef(key_name);   /* the others go at python_threads_forget */
        key_name = NULL;
        py.PyErr_Clear();
    }
}
