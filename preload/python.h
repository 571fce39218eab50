/*
 * python.h - the CPython side of the tracer, as the core sees it.
 */
#ifndef TRACE_PYTHON_H
#define TRACE_PYTHON_H

/* Called once from the library constructor, after the recorder has started.
 * In a process without CPython it does nothing; otherwise it arranges to
 * attach (audit hook, then GC callback, stack reader, allocator wrappers and
 * double-init check) and says once on stderr if it cannot. */
void python_start(void);

/* After each dlopen: a library that brought the interpreter (an embedder's
 * libpython) gets our audit hook before its Py_Initialize; in a static
 * interpreter, the newly loaded extension modules' PyObject_Init and
 * PyObject_InitVar are pointed at the double initialisation check
 * (python_init_check.c). */
void python_on_dlopen(void);

/* Around each dlclose (dl_hooks.c): before() returns 1 when the handle is
 * the traced libpython's, whose readers it takes out of the recorder;
 * after(that, dlclose's result) puts them back if the library stays, and
 * when it was unloaded the tracer stops using it and says so (INFO
 * not_watched); a libpython loaded later runs untraced. */
int python_before_dlclose(void *handle);
void python_after_dlclose(int suspended, int rc);

#endif
